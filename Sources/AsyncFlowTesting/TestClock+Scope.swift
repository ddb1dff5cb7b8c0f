import AsyncFlow

#if canImport(Testing)
  import Testing
#endif

extension TestClock {
  /// The clock of the enclosing ``withTestClock(isolation:_:)`` scope: the one that a test marked
  /// `@Test(.onTestClock)` runs on.
  @TaskLocal static var scoped: TestClock?

  /// The clock that the current test runs on: the one that `.onTestClock` (or
  /// ``withTestClock(isolation:_:)``) made for it. Reading it outside such a scope is a programmer
  /// error.
  ///
  /// ```swift
  /// @MainActor private final class SearchModel {
  ///   private(set) var results: [String] = []
  ///   private let queries = PassthroughFlow<String, Never>()
  ///   private var subscriptions = Set<FlowSubscription>()
  ///   init(clock: TestClock, search: @escaping @Sendable (String) async -> [String] = { [$0] }) {
  ///     queries.debounceFlow(for: .milliseconds(300), clock: clock)
  ///       .switchToLatestFlow { query in Flow.single { await search(query) } }
  ///       .assignFlow(to: \.results, on: self)
  ///       .store(in: &subscriptions)
  ///   }
  ///   func queryChanged(_ query: String) { queries.send(query) }
  /// }
  ///
  /// @Test(.onTestClock) @MainActor func debouncesTheQuery() async {
  ///   let clock = TestClock.current
  ///   let model = SearchModel(clock: clock)
  ///   model.queryChanged("swift")
  ///   await clock.advance(by: .milliseconds(300))
  ///   #expect(model.results == ["swift"])
  /// }
  /// ```
  public static var current: TestClock {
    if let scoped { return scoped }
    preconditionFailure(
      "TestClock.current: read outside a test clock's scope; mark the test `@Test(.onTestClock)` or wrap it in `withTestClock { clock in ... }`")
  }
}

/// Runs `body` on a new ``TestClock``'s schedule, as Kotlin's `runTest` runs a test on its test
/// dispatcher: every task that AsyncFlow starts inside (operators, sinks, `TaskSlots`), however
/// deep in the code under test, runs on the clock's executor, and ``TestClock/runCurrent()`` and
/// `advance` wait for it. The nonisolated code of `body` runs there too. ``TestClock/current`` is
/// the clock, inside.
///
/// What AsyncFlow does not start stays off the schedule: a `Task { }` of the code under test's own,
/// or the main actor's own jobs (which the clock settles without running them). A
/// ``ControlledCalls/call(_:isolation:)`` or ``Gate/wait(isolation:)`` reached from a task off the
/// clock records a test issue: the clock waits for the answer to reach that task, not for what the
/// task does next.
///
/// In a Swift Testing test, the trait says the same in one word: `@Test(.onTestClock)`.
///
/// ```swift
/// @Test @MainActor func searchesOnTheClock() async {
///   let calls = ControlledCalls<String, [String]>()
///   let results = await withTestClock { clock in
///     let model = SearchModel(clock: clock, search: { query in await calls.call(query) })
///     model.queryChanged("swift")   // TaskSlots, sinks and operators start on the clock
///     await clock.advance(by: .milliseconds(300))
///     calls.respond(to: "swift", with: ["swift"])
///     await clock.runCurrent()
///     return model.results
///   }
///   #expect(results == ["swift"])
/// }
/// ```
public func withTestClock<Success, Failure: Error>(
  isolation: isolated (any Actor)? = #isolation, _ body: (TestClock) async throws(Failure) -> Success
) async throws(Failure) -> Success {
  try await withTestClock(TestClock(isolation: isolation), isolation: isolation, body)
}

/// ``withTestClock(isolation:_:)`` on a clock made by the caller: the trait's, whose jobs run on
/// the main actor since it cannot know the test's isolation.
func withTestClock<Success, Failure: Error>(
  _ clock: TestClock, isolation: isolated (any Actor)?, _ body: (TestClock) async throws(Failure) -> Success
) async throws(Failure) -> Success {
  let result = await TestClock.$scoped.withValue(
    clock,
    operation: { () async -> Result<Success, Failure> in
      do throws(Failure) {
        return .success(
          try await clock.onSchedule(isolation: isolation) { () async throws(Failure) in try await body(clock) })
      } catch { return .failure(error) }
    }, isolation: isolation)
  return try result.get()
}

#if canImport(Testing)
  /// The trait behind `.onTestClock`: each test case it applies to runs in
  /// ``withTestClock(isolation:_:)`` on a clock of its own, ``TestClock/current``.
  ///
  /// ```swift
  /// @Suite(.onTestClock) struct SearchModelTests {
  ///   @Test func showsTheLatestQuery() async { let clock = TestClock.current /* ... */ }
  /// }
  /// ```
  public struct TestClockTrait: TestTrait, SuiteTrait, TestScoping {
    /// Applied to a suite, the trait reaches every test in it, nested suites included; Swift
    /// Testing then asks for a scope per test case (none for the suite itself), so each case gets a
    /// fresh clock.
    ///
    /// ```swift
    /// let trait: TestClockTrait = .onTestClock
    /// #expect(trait.isRecursive)
    /// ```
    public var isRecursive: Bool { true }

    /// Runs the test case in ``withTestClock(isolation:_:)``. Swift Testing calls it for each case
    /// of a test marked with the trait.
    ///
    /// ```swift
    /// @Test(.onTestClock, arguments: ["sw", "swift"]) func eachCaseHasItsOwnClock(query: String) async {
    ///   #expect(TestClock.current.now == .init(offset: .zero))
    /// }
    /// ```
    public func provideScope(
      for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
      // On the main actor: the trait cannot see whether the test is `@MainActor`, and a
      // nonisolated test body runs on the clock, as one of its jobs, either way.
      try await withTestClock(TestClock(isolation: MainActor.shared), isolation: nil) { _ in try await function() }
    }
  }

  extension Trait where Self == TestClockTrait {
    /// Runs each test case on a test clock of its own, ``TestClock/current``, with every task that
    /// AsyncFlow starts in it on the clock's schedule: Kotlin's `runTest` as a trait. Call the
    /// model's entry points directly; ``TestClock/runCurrent()`` and `advance` wait for what they
    /// start.
    ///
    /// ```swift
    /// @Test(.onTestClock) @MainActor func theLatestSearchWins() async {
    ///   let clock = TestClock.current
    ///   let model = SearchModel(clock: clock)
    ///   model.queryChanged("sw")
    ///   model.queryChanged("swift")
    ///   await clock.advance(by: .milliseconds(300))
    ///   #expect(model.results == ["swift"])
    /// }
    /// ```
    public static var onTestClock: Self { Self() }
  }
#endif
