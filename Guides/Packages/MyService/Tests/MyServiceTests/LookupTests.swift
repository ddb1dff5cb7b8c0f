import AsyncFlowTesting
import Testing

@testable import MyService

@Suite(.onTestClock, .timeLimit(.minutes(1)))
struct LookupTests {
  @Test func aLookupAnswers() async {
    let lookup = ProfileLookup { id in "profile \(id)" }
    #expect(await lookup.profile("7") == "profile 7")
  }
}
