import AsyncFlow
import AsyncFlowTesting
import Testing

/// What a zero interval does, operator by operator, as their doc comments and Guides/Time.md say:
/// `[abc]` is three elements at one instant.
@Suite("Time operators with a zero interval", .hangGuard)
struct ZeroIntervalTests {
  let marbles = Marbles(tick: .seconds(1))
  var clock: TestClock { marbles.clock }

  /// Conflates to the last element of each instant, as Combine and RxSwift do.
  @Test func debounceOfZeroKeepsTheLastElementOfEachInstant() async {
    #expect(
      await marbles.record(marbles.input("[abc]-d-[ef]|").debounceFlow(for: .zero, clock: clock), ticks: 8) == "c-d-f|")
    #expect(
      await marbles.record(Flow.sequence(["A", "B", "C"]).debounceFlow(for: .zero, clock: clock), ticks: 2) == "[C|]")
    #expect(clock.pendingSleepers == 0)
  }

  /// The window closes at the instant it opens: the first element of an instant, then the newest
  /// (or the second) of the rest; one the consumer has not taken yet is replaced.
  @Test func throttleOfZeroDeliversTheFirstAndTheNewestOrSecondOfEachInstant() async {
    let input = "[abc]-d-[ef]|"
    #expect(
      await marbles.record(marbles.input(input).throttleFlow(for: .zero, clock: clock, latest: true), ticks: 8)
        == "[ac]-d-[ef]|")
    #expect(
      await marbles.record(marbles.input(input).throttleFlow(for: .zero, clock: clock, latest: false), ticks: 8)
        == "[ab]-d-[ef]|")
    // A synchronous source hands over all three before the consumer takes the first.
    #expect(
      await marbles.record(Flow.sequence(["A", "B", "C"]).throttleFlow(for: .zero, clock: clock), ticks: 2) == "[C|]")
    #expect(clock.pendingSleepers == 0)
  }

  @Test func delayOfZeroDelaysNothing() async {
    #expect(
      await marbles.record(marbles.input("[abc]-d-[ef]|").delayFlow(for: .zero, clock: clock), ticks: 8)
        == "[abc]-d-[ef]|")
    #expect(clock.pendingSleepers == 0)
  }

  /// Times out at once unless the upstream hands over without suspending.
  @Test func timeoutOfZeroEndsAtOnceUnlessTheUpstreamHasItsElementsAtHand() async {
    #expect(await marbles.record(marbles.input("a|").timeoutFlow(after: .zero, clock: clock), ticks: 3) == "#")
    #expect(await marbles.record(marbles.input("a|").timeoutFlow(finishingAfter: .zero, clock: clock), ticks: 3) == "|")
    #expect(
      await marbles.record(Flow.sequence(["A", "B", "C"]).timeoutFlow(after: .zero, clock: clock), ticks: 2)
        == "[ABC|]")
    #expect(clock.pendingSleepers == 0)
  }

  /// Retries at once, every attempt at the same instant, one after the other.
  @Test func retryWithAZeroDelayRetriesAtOnce() async {
    #expect(
      await marbles.record(
        marbles.input("a#").retryWithBackoff(maxRetries: 2, initialDelay: .zero, clock: clock), ticks: 3)
        == "aaa#")
    #expect(clock.pendingSleepers == 0)
  }
}
