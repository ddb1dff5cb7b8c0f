import AsyncFlow
import AsyncFlowTesting
import GuideExamples
import Testing

@Suite("Combining guide snippets run", .hangGuard)
struct CombiningSnippetsTests {
  @Test func formValidationFollowsBothFields() async {
    let form = SignUpForm()
    let states = await bounded("canSubmit's first state, then its enabling") {
      var states = form.canSubmit.makeAsyncIterator()
      let first = await states.next()
      form.email.send("ada@example.com")
      form.password.send("correct horse")
      while let state = await states.next() {
        if state { return (first: first, enabled: true) }
      }
      return (first: first, enabled: false)
    }
    #expect(states?.first == false)  // "" and "": both fields have a value from the start
    #expect(states?.enabled == true)
  }

  /// The guide's type annotations compile (`combiningTypes`), and a value of such a stored type
  /// delivers what its operator promises.
  @Test func theStoredTypesDeliver() async {
    combiningTypes(a: Flow.sequence([1]), b: Flow.sequence([2]), c: Flow.sequence([3]), names: Flow.just("x"))
    let rows: AsyncZipFlowSequence<[Int], Never> = Flow.zip([Flow.sequence([1]), Flow.sequence([2]), Flow.sequence([3])])
    let delivered = await bounded("the zipped rows") {
      var delivered: [[Int]] = []
      for await row in rows { delivered.append(row) }
      return delivered
    }
    #expect(delivered == [[1, 2, 3]])
  }

  @Test func inboxMergesAndFailsOnTheFirstFailure() async throws {
    let pushed = Flow.sequence(["p1", "p2"]).setFailureType(to: ClientError.self)
    let polled = Flow.sequence(["q1"]).setFailureType(to: ClientError.self)
    #expect(try await inbox(pushed: pushed, polled: polled).sorted() == ["p1", "p2", "q1"])
    await #expect(throws: ClientError.notFound) {
      try await inbox(pushed: pushed, polled: Flow.fail(.notFound))
    }
  }

  @Test func zipPairsRequestsWithTokensUntilEitherRunsOut() async {
    let signed = await signedRequests(Flow.sequence(["a", "b", "c"]), tokens: Flow.sequence([1, 2]))
    #expect(signed == ["a#1", "b#2"])
  }

  @Test func savesTakeTheDraftAsItIsAtTheTap() async {
    let draftSeen = Gate()
    // The draft emits "v1", then parks: once parked, the operator holds "v1" as the latest.
    let draft = Flow<String, Never>(bufferSize: 0) { emitter in
      await emitter.emit("v1")
      await draftSeen.wait()
    }
    let taps = Flow<Void, Never> { emitter in
      await draftSeen.entered()
      await emitter.emit(())
      await emitter.emit(())
    }
    let saved = await bounded("the saved drafts") {
      var saved: [String] = []
      for await draft in savedDrafts(taps: taps, draft: draft) { saved.append(draft) }
      return saved
    }
    #expect(saved == ["v1", "v1"])
  }
}
