import AsyncFlow
import AsyncFlowTesting
import Testing

/// `withLatestFromFlow` pairs each base element with the other's latest as of the moment it reads
/// that element, so that its outputs do not depend on how far it read the base ahead of the
/// consumer (issue 40: a base element read ahead was paired with the other's latest as of the
/// moment the consumer took it, so a tap made before an edit sent the edited draft). RxSwift's
/// `withLatestFrom` cases run as marbles.
@Suite("withLatestFromFlow: pairing at read time", .hangGuard)
struct WithLatestFromTests {
  private static func text(_ pair: (Int, Int)) -> String { "(\(pair.0), \(pair.1))" }

  /// The issue's timeline, on the clock: `other = CurrentValueFlow(100)`, a base that emits 1,
  /// then 2, then waits on a gate before 3. The consumer takes (1, 100) and holds; the operator
  /// reads 2 meanwhile; then the other gets 200, and the gate opens. Before: (2, 200).
  @Test func aBaseElementReadAheadKeepsTheLatestOfItsRead_onTheClock() async {
    for run in 0..<20 where !Task.isCancelled {
      let clock = TestClock()
      let other = CurrentValueFlow(100)
      let atThree = Gate()
      let holding = Gate()
      let base = Flow<Int, Never>(bufferSize: 0) { emitter in
        await emitter.emit(1)
        await emitter.emit(2)
        await atThree.wait()
        await emitter.emit(3)
      }
      let consumer = clock.task {
        var iterator = base.withLatestFromFlow(other).makeAsyncIterator()
        var outputs: [String] = []
        if let first = await iterator.next() { outputs.append(Self.text(first)) }
        await holding.wait()
        while outputs.count < 3, let pair = await iterator.next() { outputs.append(Self.text(pair)) }
        return outputs
      }
      await clock.runCurrent()
      // The consumer took (1, 100) and holds; the base body has been asked past 2: 2 was read.
      #expect(holding.parkedCount == 1 && atThree.parkedCount == 1, "run \(run)")
      other.send(200)
      await clock.runCurrent()  // the operator has taken the 200
      atThree.release()
      await clock.runCurrent()
      holding.release()
      let outputs = await clock.value(of: consumer)
      #expect(outputs == ["(1, 100)", "(2, 100)", "(3, 200)"], "run \(run)")
      if outputs != ["(1, 100)", "(2, 100)", "(3, 200)"] { return }
    }
  }

  /// The same timeline on real threads, 20 times: (1, 100), then (2, 100), then (3, …) (whether
  /// the operator has taken the 200 by the time it reads 3 is the threads' race).
  @Test func aBaseElementReadAheadKeepsTheLatestOfItsRead_onThreads() async {
    for run in 0..<20 where !Task.isCancelled {
      let other = CurrentValueFlow(100)
      let atThree = Gate()
      let holding = Gate()
      let base = Flow<Int, Never>(bufferSize: 0) { emitter in
        await emitter.emit(1)
        await emitter.emit(2)
        await atThree.wait()
        await emitter.emit(3)
      }
      let consumer = Task {
        var iterator = base.withLatestFromFlow(other).makeAsyncIterator()
        var outputs: [(Int, Int)] = []
        if let first = await iterator.next() { outputs.append(first) }
        await holding.wait()
        while outputs.count < 3, let pair = await iterator.next() { outputs.append(pair) }
        return outputs.map { [$0.0, $0.1] }
      }
      await holding.entered()
      await atThree.entered()
      other.send(200)
      atThree.release()
      holding.release()
      guard let outputs = await bounded(consumer, "the consumer (run \(run))") else { return }
      #expect(outputs.prefix(2) == [[1, 100], [2, 100]], "run \(run)")
      #expect(outputs.count == 3 && outputs[2][0] == 3 && [100, 200].contains(outputs[2][1]), "run \(run)")
      if outputs.prefix(2) != [[1, 100], [2, 100]] { return }
    }
  }

  /// The base read `readAhead` elements ahead of a holding consumer when the other changes: every
  /// one of them keeps the latest of its read; the first one read after the change pairs with the
  /// new value. 64 is the bound: the base is not pulled beyond it.
  @Test(arguments: [1, 2, 64])
  func theOutputsDoNotDependOnHowFarTheBaseReadAhead(_ readAhead: Int) async {
    let clock = TestClock()
    let other = CurrentValueFlow(100)
    let atLast = Gate()
    let holding = Gate()
    let base = Flow<Int, Never>(bufferSize: 0) { emitter in
      for element in 0...readAhead { await emitter.emit(element) }
      await atLast.wait()
      await emitter.emit(readAhead + 1)
    }
    let consumer = clock.task {
      var iterator = base.withLatestFromFlow(other).makeAsyncIterator()
      var outputs: [String] = []
      if let first = await iterator.next() { outputs.append(Self.text(first)) }
      await holding.wait()
      while outputs.count < readAhead + 2, let pair = await iterator.next() { outputs.append(Self.text(pair)) }
      return outputs
    }
    await clock.runCurrent()
    #expect(holding.parkedCount == 1)
    other.send(200)
    await clock.runCurrent()
    holding.release()
    await clock.runCurrent()
    // The base's body is at the gate once the consumer has taken what the operator held.
    #expect(atLast.parkedCount == 1)
    atLast.release()
    let outputs = await clock.value(of: consumer)
    let expected = (0...readAhead).map { "(\($0), 100)" } + ["(\(readAhead + 1), 200)"]
    #expect(outputs == expected)
  }

  /// On real threads, with scripted inputs whose pulls the test counts: the base read `readAhead`
  /// elements ahead (63: the most a test sees it read without a seam inside the operator, since
  /// at 64 it stops asking), then the other changes, then the base gives one more.
  @Test(arguments: [1, 2, 63])
  func theOutputsDoNotDependOnHowFarTheBaseReadAhead_onThreads(_ readAhead: Int) async throws {
    let base = CombiningScript<Int, TestError>()
    let other = CombiningScript<Int, TestError>()
    var iterator = base.withLatestFromFlow(other).makeAsyncIterator()
    other.send(100)
    base.send(0)
    #expect(try await iterator.next().map(Self.text) == "(0, 100)")
    for element in 1...readAhead { base.send(element) }
    await base.pulled(count: readAhead + 2)  // each was read, and paired, before the next pull
    other.send(200)
    await other.pulled(count: 3)  // 200 is the latest
    base.send(readAhead + 1)
    var outputs: [String] = []
    for _ in 0...readAhead { try await iterator.next().map { outputs.append(Self.text($0)) } }
    #expect(outputs == (1...readAhead + 1).map { "(\($0), \($0 <= readAhead ? 100 : 200))" })
  }

  // MARK: RxSwift's cases

  /// One event of an RxSwift test at its virtual time, drawn as a marble symbol.
  private typealias Event = (time: Int, symbol: Character)

  /// A diagram of RxSwift's virtual times, in ticks of 5 from the subscription at 200 (250 is
  /// tick 10): each event's symbol at its tick, dashes between.
  private static func diagram(_ events: [Event]) -> String {
    var diagram = ""
    for (time, symbol) in events {
      diagram += String(repeating: "-", count: (time - 200) / 5 - diagram.count) + String(symbol)
    }
    return diagram
  }

  /// `base.withLatestFromFlow(other)` on the clock, drawn twice: each output as its base element,
  /// then as its other element.
  private static func record(_ base: [Event], _ other: [Event]) async -> (base: String, other: String) {
    let ticks = (max(base.last!.time, other.last!.time) - 200) / 5 + 2
    func run(_ symbol: @escaping @Sendable ((String, String)) -> Character) async -> String {
      let marbles = Marbles(tick: .seconds(1))
      let paired = marbles.input(diagram(base)).withLatestFromFlow(marbles.input(diagram(other)))
      return await marbles.record(paired, ticks: ticks, symbol: symbol)
    }
    return (await run { $0.0.first! }, await run { $0.1.first! })
  }

  /// RxSwift's base before its end (its 1 and 2 come before the subscription): 10 is `a`.
  private static let base: [Event] = [
    (250, "3"), (260, "4"), (310, "5"), (340, "6"), (410, "7"), (420, "8"), (470, "9"), (550, "a"),
  ]
  private static let shortBase: [Event] = [(250, "3"), (260, "4"), (310, "5"), (340, "6")]
  private static let other: [Event] = [(255, "b"), (330, "f"), (350, "q")]

  /// `testWithLatestFrom_Simple1` (and `_MakeSureDefaultOverloadTakesSecondSequenceValues`): the
  /// other gives bar at 255, foo at 330, qux at 350 and finishes at 400; the base's 3 at 250 has
  /// nothing to pair with; the base's finish at 590 ends it.
  @Test func rxSwiftSimple1() async {
    let output = await Self.record(Self.base + [(590, "|")], Self.other + [(400, "|")])
    #expect(output.base == Self.diagram(Self.base.dropFirst() + [(590, "|")]))
    let others: [Character] = ["b", "b", "f", "q", "q", "q", "q"]
    #expect(output.other == Self.diagram(zip(Self.base.dropFirst(), others).map { ($0.time, $1) } + [(590, "|")]))
  }

  /// `testWithLatestFrom_Simple2`: the base finishes at 390, before the other (baz at 370, its
  /// finish at 400): the base's finish ends it.
  @Test func rxSwiftSimple2() async {
    let output = await Self.record(Self.shortBase + [(390, "|")], Self.other + [(370, "z"), (400, "|")])
    #expect(output.base == Self.diagram([(260, "4"), (310, "5"), (340, "6"), (390, "|")]))
    #expect(output.other == Self.diagram([(260, "b"), (310, "b"), (340, "f"), (390, "|")]))
  }

  /// `testWithLatestFrom_Simple3`: the other's first comes at 245, before the base's 3 at 250,
  /// which pairs with it.
  @Test func rxSwiftSimple3() async {
    let other: [Event] = [(245, "b"), (330, "f"), (350, "q"), (370, "z"), (400, "|")]
    let output = await Self.record(Self.shortBase + [(390, "|")], other)
    #expect(output.base == Self.diagram(Self.shortBase + [(390, "|")]))
    #expect(output.other == Self.diagram([(250, "b"), (260, "b"), (310, "b"), (340, "f"), (390, "|")]))
  }

  /// `testWithLatestFrom_Error1`: the base fails at 590, after its outputs.
  @Test func rxSwiftError1() async {
    let output = await Self.record(Self.base + [(590, "#")], Self.other + [(400, "|")])
    #expect(output.base == Self.diagram(Self.base.dropFirst() + [(590, "#")]))
  }

  /// `testWithLatestFrom_Error2`: the other fails at 370, which fails the result then.
  @Test func rxSwiftError2() async {
    let output = await Self.record(Self.shortBase + [(390, "|")], Self.other + [(370, "#")])
    #expect(output.base == Self.diagram([(260, "4"), (310, "5"), (340, "6"), (370, "#")]))
    #expect(output.other == Self.diagram([(260, "b"), (310, "b"), (340, "f"), (370, "#")]))
  }
}
