import AsyncFlow

// The code of Guides/Combining.md. Each region is copied into the guide by
// `.ci/guide-blocks.py --write` and checked by `.ci/guide-blocks.py` in CI; the functions are
// compiled with the package and run by `CombiningSnippetsTests`.

// region: combining-form-validation
/// A sign-up form: Submit is enabled while the email looks like one and the password is long
/// enough. Each field is a `CurrentValueFlow`, so both have a value from the start.
public final class SignUpForm: Sendable {
  public let email = CurrentValueFlow("")
  public let password = CurrentValueFlow("")

  public init() {}

  /// One value per edit of either field, computed from the latest of both.
  public var canSubmit: Flow<Bool, Never> {
    Flow(Flow.combineLatest(email, password)).map { email, password in
      email.contains("@") && password.count >= 8
    }
  }
}
// endregion: combining-form-validation

// region: combining-types
/// What each operator returns: a concrete type, with the element and `Failure` in it.
public func combiningTypes(a: Flow<Int, Never>, b: Flow<Int, Never>, c: Flow<Int, Never>, names: Flow<String, Never>) {
  let merged: AsyncMergeInputsSequence<Int, Never> = Flow.merge(a, b, c)
  let latest: AsyncCombineLatestFlowSequence<(Int, String), Never> = Flow.combineLatest(a, names)
  let zipped: AsyncZipFlowSequence<(Int, Int, Int), Never> = Flow.zip(a, b, c)
  let rows: AsyncZipFlowSequence<[Int], Never> = Flow.zip([a, b, c])
  let sampled: AsyncWithLatestFromFlowSequence<(Int, String), Never> = a.withLatestFromFlow(names)
  _ = (merged, latest, zipped, rows, sampled)
}
// endregion: combining-types

// region: combining-merge
/// Messages pushed by the server and messages found by polling, in one inbox, as they come. The
/// first failure of either ends the loop and cancels the other.
public func inbox(pushed: Flow<String, ClientError>, polled: Flow<String, ClientError>) async throws -> [String] {
  var messages: [String] = []
  for try await message in Flow.merge(pushed, polled) { messages.append(message) }
  return messages
}
// endregion: combining-merge

// region: combining-zip
/// The n-th request is signed with the n-th token; when the tokens run out, so do the requests.
public func signedRequests(_ requests: Flow<String, Never>, tokens: Flow<Int, Never>) async -> [String] {
  var signed: [String] = []
  for await (request, token) in Flow.zip(requests, tokens) { signed.append("\(request)#\(token)") }
  return signed
}
// endregion: combining-zip

// region: combining-with-latest-from
/// Every tap on Save stores the draft as it is at that moment. The draft's changes alone save
/// nothing, and a tap before the draft's first value is dropped.
public func savedDrafts(
  taps: some AsyncSequence<Void, Never> & Sendable, draft: some AsyncSequence<String, Never> & Sendable
) -> Flow<String, Never> {
  Flow(taps.withLatestFromFlow(draft)).map { _, draft in draft }
}
// endregion: combining-with-latest-from
