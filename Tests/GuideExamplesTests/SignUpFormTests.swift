import AsyncFlow
import AsyncFlowTesting
import GuideExamples
import Testing

/// The Observation guide's sign-up form, tested with AsyncFlowTesting alone: the clock is a
/// `TestClock`, the service's two calls are `ControlledCalls` stubs that answer when the test says
/// so, and `runCurrent()`/`advance` wait for the main-actor writes.
@Suite("Sign-up form", .onTestClock, .hangGuard)
@MainActor
struct SignUpFormTests {
  typealias Check = ControlledCalls<String, Result<Bool, SignUpError>>
  typealias Register = ControlledCalls<SignUp, Result<String, SignUpError>>

  /// A started model whose checks and registrations wait for the test's answers.
  private func makeModel(_ clock: TestClock) async -> (SignUpFormModel, Check, Register) {
    let checks = Check()
    let registrations = Register()
    let model = SignUpFormModel(
      clock: clock,
      checkName: { name throws(SignUpError) in try await checks.call(name).get() },
      register: { form throws(SignUpError) in try await registrations.call(form).get() })
    model.start()
    await clock.runCurrent()
    return (model, checks, registrations)
  }

  /// Fills the form with valid fields and answers the name's check: available.
  private func fillValidForm(_ model: SignUpFormModel, _ checks: Check, _ clock: TestClock) async {
    model.name = "anna"
    model.email = "anna@example.com"
    model.password = "correct horse"
    await clock.advance(by: .milliseconds(300))
    checks.respond(to: "anna", with: .success(true))
    await clock.runCurrent()
    #expect(model.availability == .loaded(NameAvailability(name: "anna", isAvailable: true)))
    #expect(model.canSubmit)
  }

  @Test func validationFollowsEveryField() async {
    let clock = TestClock.current
    let (model, _, _) = await makeModel(clock)
    #expect(!model.validation.isValid)
    model.name = "anna"
    model.email = "anna@"
    await clock.runCurrent()
    #expect(!model.validation.nameIsTooShort)
    #expect(model.validation.emailIsInvalid)
    #expect(model.validation.passwordIsTooShort)
    model.email = "anna@example.com"
    model.password = "correct horse"
    await clock.runCurrent()
    #expect(model.validation.isValid)
  }

  @Test func theNameIsCheckedOnceTheTypingPausesWithItsLoadStates() async {
    let clock = TestClock.current
    let (model, checks, _) = await makeModel(clock)
    model.name = "an"
    await clock.advance(by: .milliseconds(300))
    #expect(checks.arguments == [])  // too short to check
    model.name = "ann"
    await clock.advance(by: .milliseconds(100))
    model.name = "anna"
    await clock.advance(by: .milliseconds(299))
    #expect(checks.arguments == [])  // still typing
    await clock.advance(by: .milliseconds(1))
    #expect(checks.arguments == ["anna"])
    #expect(model.availability == .loading)
    checks.respond(to: "anna", with: .success(false))
    await clock.runCurrent()
    #expect(model.availability == .loaded(NameAvailability(name: "anna", isAvailable: false)))
  }

  @Test func aStaleAvailabilityAnswerNeverOverwritesANewerOne() async {
    let clock = TestClock.current
    let (model, checks, _) = await makeModel(clock)
    model.name = "ann"
    await clock.advance(by: .milliseconds(300))
    model.name = "anna"
    await clock.advance(by: .milliseconds(300))
    await checks.parked(count: 2)  // both checks are in flight: "ann" was superseded, not answered
    checks.respond(to: "anna", with: .success(true))
    await clock.runCurrent()
    #expect(model.availability == .loaded(NameAvailability(name: "anna", isAvailable: true)))
    checks.respond(to: "ann", with: .success(false))  // the old answer, last
    await clock.runCurrent()
    #expect(model.availability == .loaded(NameAvailability(name: "anna", isAvailable: true)))
    #expect(checks.log.map(\.wasCancelled) == [true, false])
  }

  @Test func aFailedCheckIsAStateAndTheNextNameIsCheckedAgain() async {
    let clock = TestClock.current
    let (model, checks, _) = await makeModel(clock)
    model.name = "anna"
    await clock.advance(by: .milliseconds(300))
    checks.fail("anna", with: SignUpError.offline)
    await clock.runCurrent()
    #expect(model.availability == .failed(.offline))
    model.name = "annabel"
    await clock.advance(by: .milliseconds(300))
    checks.respond(to: "annabel", with: .success(true))
    await clock.runCurrent()
    #expect(model.availability == .loaded(NameAvailability(name: "annabel", isAvailable: true)))
  }

  @Test func anInvalidFormCannotSubmit() async {
    let clock = TestClock.current
    let (model, checks, registrations) = await makeModel(clock)
    await fillValidForm(model, checks, clock)
    model.password = "short"  // the shown validation has not caught up yet: canSubmit reads the fields
    #expect(!model.canSubmit)
    model.submit()
    await clock.runCurrent()
    #expect(registrations.arguments == [])
    #expect(!model.isSubmitting)
  }

  @Test func aNameWhoseAvailabilityIsNotKnownYetCannotSubmit() async {
    let clock = TestClock.current
    let (model, checks, registrations) = await makeModel(clock)
    await fillValidForm(model, checks, clock)
    model.name = "annabel"  // "anna" was available; "annabel" is not checked yet
    #expect(!model.canSubmit)
    model.submit()
    await clock.advance(by: .milliseconds(300))
    #expect(model.availability == .loading)
    #expect(!model.canSubmit)
    checks.respond(to: "annabel", with: .success(false))
    await clock.runCurrent()
    #expect(!model.canSubmit)
    #expect(registrations.arguments == [])
  }

  @Test func aDoubleSubmitSendsOneRequest() async {
    let clock = TestClock.current
    let (model, checks, registrations) = await makeModel(clock)
    await fillValidForm(model, checks, clock)
    model.submit()
    model.submit()  // the double tap: before `isSubmitting` could even disable the button
    await registrations.calls(count: 1)
    await clock.runCurrent()
    #expect(model.isSubmitting)
    model.submit()  // and a third tap while the request is in flight
    await clock.runCurrent()
    let form = SignUp(name: "anna", email: "anna@example.com", password: "correct horse")
    #expect(registrations.arguments == [form])
    registrations.respond(to: form, with: .success("account-1"))
    await clock.runCurrent()
    #expect(!model.isSubmitting)
    #expect(model.outcome == .success("account-1"))
  }

  @Test func aRejectedSubmitIsReportedAndTheFormCanBeSentAgain() async {
    let clock = TestClock.current
    let (model, checks, registrations) = await makeModel(clock)
    await fillValidForm(model, checks, clock)
    model.submit()
    await registrations.calls(count: 1)
    registrations.fail(call: 0, with: SignUpError.rejected("name taken meanwhile"))
    await clock.runCurrent()
    #expect(model.outcome == .failure(.rejected("name taken meanwhile")))
    #expect(!model.isSubmitting)
    model.submit()
    await registrations.calls(count: 2)
    registrations.respond(toCall: 1, with: .success("account-2"))
    await clock.runCurrent()
    #expect(model.outcome == .success("account-2"))
  }

  @Test func aReleasedFormIsDeinitialisedAndItsSubmitCancelled() async {
    let clock = TestClock.current
    var (model, checks, registrations): (SignUpFormModel?, Check, Register) = await makeModel(clock)
    weak let released = model
    await fillValidForm(model!, checks, clock)
    model?.submit()
    await registrations.calls(count: 1)
    model = nil
    #expect(released == nil)
    await clock.runCurrent()
    #expect(registrations.log.first?.wasCancelled == true)
    registrations.respond(toCall: 0, with: .success("late"))
    await clock.run()
    #expect(clock.pendingSleepers == 0)
  }
}
