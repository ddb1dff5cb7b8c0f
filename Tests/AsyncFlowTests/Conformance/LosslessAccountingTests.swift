import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// One element of one producer: `seq` counts that producer's elements from 0.
struct Tagged: Sendable, Hashable {
  var producer: Int
  var seq: Int
}

/// Whether `received` holds every producer's elements `0..<each`, each exactly once and in order.
/// Returns the first producer that is not accounted for, described, or `nil`.
func unaccounted(_ received: [Tagged], producers: Int, each: Int) -> String? {
  var next = Array(repeating: 0, count: producers)
  for element in received {
    guard element.seq == next[element.producer] else {
      return "producer \(element.producer): expected \(next[element.producer]), got \(element.seq)"
    }
    next[element.producer] += 1
  }
  if let short = next.firstIndex(where: { $0 != each }) { return "producer \(short): \(next[short]) of \(each)" }
  return nil
}

/// Elements accounted for by this suite's tests, for Guides/Guarantees.md.
enum LosslessFigures {
  static let producers = 4
  static let each = 2_500
}

// Five minutes: under ThreadSanitizer on two cores its longest tests take most of one when idle.
@Suite("Lossless accounting under load", .hangGuard)
struct LosslessAccountingTests {
  /// Four producers on parallel threads send 2,500 elements each into an unbounded subject; each
  /// of three subscribers receives all 10,000, every producer's in its order.
  @Test func passthroughUnboundedLosesNothingAcrossProducersAndSubscribers() async {
    let (producers, each) = (LosslessFigures.producers, LosslessFigures.each)
    let subject = PassthroughFlow<Tagged, Never>(bufferingPolicy: .unbounded)
    let subscribers = (0..<3).map { _ in Task { await collect(subject).elements } }
    await subject.subscribers(count: 3)
    await withTaskGroup(of: Void.self) { group in
      for producer in 0..<producers {
        group.addTask { for seq in 0..<each { subject.send(Tagged(producer: producer, seq: seq)) } }
      }
    }
    subject.finish()
    for subscriber in subscribers {
      guard let received = await bounded(subscriber, "subscriber") else { return }
      #expect(unaccounted(received, producers: producers, each: each) == nil)
    }
    #expect(subject.subscriberCount == 0)
  }

  /// A current-value subject is conflated: a slow subscriber sees the newest value, never an older
  /// one after a newer, and the last value sent before the finish.
  @Test func currentValueDeliversNewestOnlyInOrderAndTheLastValue() async {
    let producers = LosslessFigures.producers
    let subject = CurrentValueFlow(Tagged(producer: 0, seq: -1))
    let subscribers = (0..<3).map { _ in Task { await collect(subject).elements } }
    await subject.subscribers(count: 3)
    await withTaskGroup(of: Void.self) { group in
      for producer in 0..<producers {
        group.addTask { for seq in 0..<LosslessFigures.each { subject.send(Tagged(producer: producer, seq: seq)) } }
      }
    }
    let last = subject.value
    subject.finish()
    for subscriber in subscribers {
      guard let received = await bounded(subscriber, "subscriber") else { return }
      for producer in 0..<producers {
        let seqs = received.filter { $0.producer == producer && $0.seq >= 0 }.map(\.seq)
        #expect(zip(seqs, seqs.dropFirst()).allSatisfy { $0 < $1 }, "producer \(producer) out of order")
      }
      #expect(received.last == last)
    }
  }

  /// A shared upstream of 2,000 elements, paced on a test clock; subscribers join at 0, 5 and 12
  /// seconds. Each gets a gap-free run up to the last element: all of it from where it joined
  /// (with `replay`, from up to `replay` elements before).
  @Test(arguments: [0, 3])
  func shareFlowGivesEverySubscriberAGapFreeSuffix(replay: Int) async {
    let clock = TestClock()
    let total = 2_000
    let shared = Flow<Int, Never> { emitter in
      for element in 0..<total {
        await emitter.emit(element)
        if element % 100 == 99 { try? await clock.sleep(for: .seconds(1)) }
      }
    }.shareFlow(replay: replay)
    var subscribers: [Task<[Int], Never>] = []
    for joinAt in [0, 5, 12] {
      await clock.advance(to: .init(offset: .seconds(joinAt)))
      subscribers.append(clock.task { await collect(shared).elements })
      await clock.runCurrent()
    }
    await clock.run()
    for (index, subscriber) in subscribers.enumerated() {
      guard let received = await bounded(subscriber, "subscriber") else { return }
      #expect(received.last == total - 1, "subscriber \(index)")
      #expect(received == Array((received.first ?? 0)..<total), "subscriber \(index) has a gap")
      if index == 0 { #expect(received.count == total) }
    }
    #expect(shared.subscriberCount == 0)
  }

  /// `mergeFlow` at several limits (and `concatFlow`): eight inners of 1,000 elements on parallel
  /// threads, all accounted for, each inner's in its order; `concatFlow` keeps the inners in turn.
  @Test(arguments: [1, 2, 4, Int.max])
  func mergeFlowLosesNothingAtEveryLimit(maxConcurrent: Int) async {
    let (inners, each) = (8, 1_000)
    let merged = Flow.sequence(0..<inners).mergeFlow(maxConcurrent: maxConcurrent) { producer in
      Flow<Tagged, Never> { emitter in
        for seq in 0..<each { await emitter.emit(Tagged(producer: producer, seq: seq)) }
      }
    }
    let received = await bounded(Task.detached { await collect(merged).elements }, "the collected flow") ?? []
    #expect(unaccounted(received, producers: inners, each: each) == nil)
  }

  @Test func concatFlowLosesNothingAndKeepsTheInnersInTurn() async {
    let (inners, each) = (8, 1_000)
    let concatenated = Flow.sequence(0..<inners).concatFlow { producer in
      Flow<Tagged, Never> { emitter in
        for seq in 0..<each { await emitter.emit(Tagged(producer: producer, seq: seq)) }
      }
    }
    let received = await bounded(Task.detached { await collect(concatenated).elements }, "the collected flow") ?? []
    #expect(unaccounted(received, producers: inners, each: each) == nil)
    #expect(received.map(\.producer) == received.map(\.producer).sorted())
  }

  /// A `Flow` body whose eight child tasks emit 1,250 elements each at once (`emit` is safe from
  /// any task of the body): all 10,000 arrive, each child's in its order, and the body's children
  /// have ended when the iteration ends.
  @Test(arguments: [0, 1, 64])
  func flowBodyEmittingFromManyChildTasksLosesNothing(bufferSize: Int) async {
    let (children, each) = (8, 1_250)
    let ended = LockedState(0)
    let flow = Flow<Tagged, Never>(bufferSize: bufferSize) { emitter in
      await withTaskGroup(of: Void.self) { group in
        for child in 0..<children {
          group.addTask {
            defer { ended.withLock { $0 += 1 } }
            for seq in 0..<each { await emitter.emit(Tagged(producer: child, seq: seq)) }
          }
        }
      }
    }
    let received = await bounded(Task.detached { await collect(flow).elements }, "the collected flow") ?? []
    #expect(unaccounted(received, producers: children, each: each) == nil)
    #expect(ended.withLock { $0 } == children)
  }
}
