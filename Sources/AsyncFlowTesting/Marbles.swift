import AsyncFlow

/// Marble diagrams on a ``TestClock``: turn a diagram into a timed input sequence, and record what
/// a sequence does as a diagram to compare with the expected one.
///
/// | symbol | meaning |
/// |---|---|
/// | `-` | a tick with nothing |
/// | `a`, `1`, any other character | an element, delivered at that tick |
/// | `\|` | the sequence finishes |
/// | `#` | the sequence fails (with ``MarbleFailure``) |
/// | `[ab\|]` | several events at the same tick; the group takes one tick |
/// | space | ignored, for alignment |
///
/// Every symbol (or group) takes one tick, so in `"a-b--c|"` `a` is at 0, `b` at 2, `c` at 5 and the
/// finish at 6 ticks.
///
/// ```swift
/// let marbles = Marbles(tick: .seconds(1))
/// let input = marbles.input("a-b----c|")
/// let output = await marbles.record(input.debounceFlow(for: .seconds(2), clock: marbles.clock), ticks: 10)
/// #expect(output == "----b---[c|]")
/// ```
public struct Marbles: Sendable {
  /// The clock the inputs and recordings run on.
  ///
  /// ```swift
  /// await marbles.clock.advance(by: .seconds(1))
  /// ```
  public let clock: TestClock
  /// The duration of one symbol of a diagram.
  ///
  /// ```swift
  /// let duration = marbles.tick * 3  // three symbols
  /// ```
  public let tick: Duration

  /// Creates marbles on `clock`, where one symbol lasts `tick`.
  ///
  /// ```swift
  /// let marbles = Marbles(clock: TestClock(), tick: .milliseconds(100))
  /// ```
  public init(clock: TestClock = TestClock(), tick: Duration = .seconds(1)) {
    precondition(tick > .zero, "Marbles(tick:): tick must be greater than 0, got \(tick)")
    self.clock = clock
    self.tick = tick
  }

  /// A cold sequence that plays `diagram`, its elements being the diagram's characters as strings.
  /// Each iteration plays it from the start, timed from when the iteration starts.
  ///
  /// ```swift
  /// let keystrokes = marbles.input("s-w-i|")
  /// ```
  public func input(_ diagram: String) -> Flow<String, MarbleFailure> { input(diagram) { String($0) } }

  /// A cold sequence that plays `diagram`, mapping each element character with `value`.
  ///
  /// ```swift
  /// let numbers = marbles.input("1-2|") { Int(String($0))! }
  /// ```
  public func input<Element: Sendable>(
    _ diagram: String, _ value: @escaping @Sendable (Character) -> Element
  ) -> Flow<Element, MarbleFailure> {
    let (events, clock, tick) = (MarbleEvent.parse(diagram), self.clock, self.tick)
    return Flow { emitter throws(MarbleFailure) in
      let start = clock.now
      for event in events {
        do { try await clock.sleep(until: start.advanced(by: tick * event.tick)) } catch { return }
        switch event.symbol {
        case .element(let character): await emitter.emit(value(character))
        case .finish: return
        case .failure: throw MarbleFailure()
        }
      }
    }
  }

  /// Iterates `sequence` on the clock for `ticks` ticks, then cancels it, and returns what it did
  /// as a diagram. Elements are drawn as their one-character description.
  ///
  /// ```swift
  /// let diagram = await marbles.record(marbles.input("a-b|").delayFlow(for: .seconds(2), clock: marbles.clock), ticks: 6)
  /// #expect(diagram == "--a-b|")
  /// ```
  public func record<S: AsyncSequence & Sendable>(
    _ sequence: S, ticks: Int, symbol: @escaping @Sendable (S.Element) -> Character = MarbleEvent.describe
  ) async -> String where S.Element: Sendable {
    precondition(ticks >= 0, "Marbles.record(_:ticks:): ticks must be 0 or greater, got \(ticks)")
    let recorded = LockedState<[MarbleEvent]>([])
    let (clock, tick, start) = (self.clock, self.tick, self.clock.now)
    let note = { @Sendable (symbol: MarbleEvent.Symbol) in
      let event = MarbleEvent(tick: Int(start.duration(to: clock.now) / tick), symbol: symbol)
      recorded.withLock { $0.append(event) }
    }
    let consumer = clock.task {
      var iterator = sequence.makeAsyncIterator()
      do throws(S.Failure) {
        while let element = try await iterator.next(isolation: nil) { note(.element(symbol(element))) }
        if !Task.isCancelled { note(.finish) }
      } catch { note(.failure) }
    }
    await clock.advance(by: tick * ticks)
    consumer.cancel()
    await consumer.value
    return MarbleEvent.render(recorded.withLock { $0 })
  }
}

/// The failure that `#` in a marble diagram stands for.
///
/// ```swift
/// let failing: Flow<String, MarbleFailure> = marbles.input("a#")
/// ```
public struct MarbleFailure: Error, Hashable, Sendable {
  /// Creates the failure.
  ///
  /// ```swift
  /// let offline = Flow<String, MarbleFailure>.fail(MarbleFailure())  // what "#" plays
  /// ```
  public init() {}
}

/// One event of a marble diagram: what happened, and at which tick.
///
/// ```swift
/// let events = MarbleEvent.parse("a-[b|]")  // a at 0, b and the finish at 2
/// ```
public struct MarbleEvent: Hashable, Sendable {
  /// What a marble event is.
  ///
  /// ```swift
  /// let finish = MarbleEvent.Symbol.finish
  /// ```
  public enum Symbol: Hashable, Sendable {
    /// An element, drawn as this character.
    case element(Character)
    /// `|`
    case finish
    /// `#`
    case failure
  }

  /// The tick the event happens at.
  ///
  /// ```swift
  /// let last = events.map(\.tick).max()
  /// ```
  public var tick: Int
  /// What happens.
  ///
  /// ```swift
  /// for event in events {
  ///   if case .element(let character) = event.symbol { print(character) }
  /// }
  /// ```
  public var symbol: Symbol

  /// An event at `tick`.
  ///
  /// ```swift
  /// let finish = MarbleEvent(tick: 3, symbol: .finish)
  /// ```
  public init(tick: Int, symbol: Symbol) {
    self.tick = tick
    self.symbol = symbol
  }

  /// The events of `diagram`, in order; see ``Marbles`` for the symbols.
  ///
  /// ```swift
  /// #expect(MarbleEvent.parse("a|").count == 2)
  /// ```
  public static func parse(_ diagram: String) -> [MarbleEvent] {
    var events: [MarbleEvent] = []
    var tick = 0
    var inGroup = false
    for character in diagram where character != " " {
      switch character {
      case "[":
        precondition(!inGroup, "marble diagram \"\(diagram)\": groups cannot nest")
        inGroup = true
        continue
      case "]":
        precondition(inGroup, "marble diagram \"\(diagram)\": ']' without '['")
        inGroup = false
      case "-": break
      case "|": events.append(MarbleEvent(tick: tick, symbol: .finish))
      case "#": events.append(MarbleEvent(tick: tick, symbol: .failure))
      default: events.append(MarbleEvent(tick: tick, symbol: .element(character)))
      }
      if !inGroup { tick += 1 }
    }
    precondition(!inGroup, "marble diagram \"\(diagram)\": '[' without ']'")
    return events
  }

  /// Draws `events` as a diagram: one symbol per tick up to the last event, groups for ticks with
  /// several events.
  ///
  /// ```swift
  /// #expect(MarbleEvent.render(MarbleEvent.parse("a--[b|]")) == "a--[b|]")
  /// ```
  public static func render(_ events: [MarbleEvent]) -> String {
    guard let last = events.map(\.tick).max() else { return "" }
    var byTick = [[MarbleEvent]](repeating: [], count: last + 1)
    for event in events { byTick[event.tick].append(event) }
    return byTick.map { events in
      let symbols = String(events.map(\.character))
      return events.isEmpty ? "-" : events.count == 1 ? symbols : "[\(symbols)]"
    }.joined()
  }

  /// The default drawing of an element: its description, which must be one character.
  ///
  /// ```swift
  /// #expect(MarbleEvent.describe(7) == "7")
  /// ```
  @Sendable
  public static func describe<Element>(_ element: Element) -> Character {
    let description = String(describing: element)
    precondition(
      description.count == 1, "marble element \"\(description)\" must be drawn as one character; pass symbol:")
    return description.first!
  }

  private var character: Character {
    if case .element(let character) = symbol { return character }
    return symbol == .finish ? "|" : "#"
  }
}
