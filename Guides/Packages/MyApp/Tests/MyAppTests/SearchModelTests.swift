import AsyncFlowTesting
import MyApp
import Testing

@MainActor
@Suite(.onTestClock, .timeLimit(.minutes(1)))
struct SearchModelTests {
  @Test func theLatestQueryWins() async {
    let model = SearchModel { query in [query.uppercased()] }
    await TestClock.current.run()  // the model's sink has subscribed
    model.type("swift")
    await TestClock.current.run()
    #expect(model.results.value == ["SWIFT"])
  }
}
