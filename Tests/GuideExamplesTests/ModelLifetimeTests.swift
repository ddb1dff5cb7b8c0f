import AsyncFlow
import AsyncFlowTesting
import GuideExamples
import Testing

/// A screen's work ends with its model: a request in flight does not keep a released model alive,
/// releasing the model cancels the request (through its `TaskSlots`), and nothing is written.
@Suite("Model lifetimes", .hangGuard)
@MainActor
struct ModelLifetimeTests {
  /// What the stubbed request saw once the test answered it: whether its task was cancelled.
  private struct Outcome: Hashable, Sendable {
    var wasCancelled: Bool
  }

  @Test func articlesModelReleasedMidRequestIsDeinitialisedAndItsRequestCancelled() async {
    let calls = ControlledCalls<ArticlesQuery, Result<[String], any Error>>()
    let outcomes = ControlledCalls<Outcome, Void>()
    var model: ArticlesModel? = ArticlesModel { query in
      let result = await calls.call(query)  // answers even when cancelled, like a request already sent
      await outcomes.call(Outcome(wasCancelled: Task.isCancelled))
      return result
    }
    weak let released = model
    model?.onAppear()
    await calls.calls(count: 1)

    model = nil
    // Nothing but the model's own `TaskSlots` held the request: the model is gone at once.
    #expect(released == nil)

    calls.respond(to: ArticlesQuery(category: "all"), with: .success(["late"]))
    await outcomes.calls(count: 1)
    #expect(outcomes.arguments == [Outcome(wasCancelled: true)])
    for outcome in outcomes.arguments { outcomes.respond(to: outcome, with: ()) }
  }

  @Test func searchScreenReleasedMidSearchIsDeinitialisedAndItsSearchCancelled() async {
    let calls = ControlledCalls<String, [String]>()
    let outcomes = ControlledCalls<Outcome, Void>()
    var screen: SearchScreen? = SearchScreen(
      search: { query in
        let found = await calls.call(query)
        await outcomes.call(Outcome(wasCancelled: Task.isCancelled))
        return found
      },
      loadDetails: { _, _ in "" }, submit: { _ in })
    weak let released = screen
    screen?.queryChanged("swift")
    await calls.calls(count: 1)

    screen = nil
    #expect(released == nil)

    calls.respond(to: "swift", with: ["late"])
    await outcomes.calls(count: 1)
    #expect(outcomes.arguments == [Outcome(wasCancelled: true)])
    for outcome in outcomes.arguments { outcomes.respond(to: outcome, with: ()) }
  }
}
