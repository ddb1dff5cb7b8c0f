import AsyncFlow
import Observation

// region: sign-up-types
/// What the sign-up form sends.
public struct SignUp: Hashable, Sendable {
  public var name: String
  public var email: String
  public var password: String

  public init(name: String, email: String, password: String) {
    (self.name, self.email, self.password) = (name, email, password)
  }
}

/// The sign-up service's failure.
public enum SignUpError: Error, Hashable, Sendable {
  case offline
  case rejected(String)
}

/// What the fields say, rule by rule: a pure function of the three fields.
public struct SignUpValidation: Hashable, Sendable {
  public var nameIsTooShort: Bool
  public var emailIsInvalid: Bool
  public var passwordIsTooShort: Bool

  public init(name: String, email: String, password: String) {
    nameIsTooShort = name.count < 3
    emailIsInvalid = !email.contains("@") || email.hasSuffix("@")
    passwordIsTooShort = password.count < 8
  }

  public var isValid: Bool { !nameIsTooShort && !emailIsInvalid && !passwordIsTooShort }
}

/// The answer of the availability check, with the name it answers for.
public struct NameAvailability: Hashable, Sendable {
  public var name: String
  public var isAvailable: Bool

  public init(name: String, isAvailable: Bool) {
    (self.name, self.isAvailable) = (name, isAvailable)
  }
}
// endregion: sign-up-types

// region: sign-up-form-model
/// A sign-up form's model: the fields are plain properties the view binds; the model derives the
/// validation from all three with `combineLatest`, checks the name's availability once the typing
/// pauses (the newest name only: an older answer never overwrites a newer one), and submits first
/// wins, so that a double tap sends one request.
@available(macOS 26.0, iOS 26.0, tvOS 26.0, watchOS 26.0, visionOS 26.0, *)
@MainActor @Observable
public final class SignUpFormModel {
  public var name = ""
  public var email = ""
  public var password = ""

  public private(set) var validation = SignUpValidation(name: "", email: "", password: "")
  public private(set) var availability: LoadState<NameAvailability, SignUpError> = .idle
  /// Bound to the submit slot's running state: no flag of the model's own to keep right.
  public private(set) var isSubmitting = false
  /// The account the service created, or why it refused.
  public private(set) var outcome: Result<String, SignUpError>?

  public enum Work: Hashable, Sendable { case submit }

  @ObservationIgnored private let clock: AnyFlowClock
  @ObservationIgnored private let checkName: @Sendable (String) async throws(SignUpError) -> Bool
  @ObservationIgnored private let register: @Sendable (SignUp) async throws(SignUpError) -> String
  @ObservationIgnored private let slots = TaskSlots<Work>()
  @ObservationIgnored private var subscriptions = Set<FlowSubscription>()

  /// The clock is injected: `ContinuousClock` in the app, a `TestClock` in tests.
  public init(
    clock: some Clock<Duration> = ContinuousClock(),
    checkName: @escaping @Sendable (String) async throws(SignUpError) -> Bool,
    register: @escaping @Sendable (SignUp) async throws(SignUpError) -> String
  ) {
    self.clock = AnyFlowClock(clock)
    self.checkName = checkName
    self.register = register
  }

  /// Starts the pipelines; call it once, when the screen appears.
  public func start() {
    let checkName = self.checkName
    let name = Flow.observing(\.name, on: self)

    Flow.combineLatest(name, Flow.observing(\.email, on: self), Flow.observing(\.password, on: self))
      .map { SignUpValidation(name: $0, email: $1, password: $2) }
      .removeDuplicatesFlow()
      .assignFlow(to: \.validation, on: self)
      .store(in: &subscriptions)

    name
      .debounceFlow(for: .milliseconds(300), clock: clock)
      .removeDuplicatesFlow()
      .filter { $0.count >= 3 }
      .map { name in
        // One check per name, as load states: `.loading`, then its answer.
        Flow.single { () throws(SignUpError) in try await checkName(name) }
          .map { LoadState<NameAvailability, SignUpError>.loaded(NameAvailability(name: name, isAvailable: $0)) }
          .prependState(.loading)
      }
      // A failed check is a state of its own name; the pipeline goes on with the next name.
      .catchInner { error in Flow.just(.failed(error)) }
      .switchToLatestFlow()
      .assignFlow(to: \.availability, on: self)
      .store(in: &subscriptions)

    slots.isRunningFlow(.submit).assignFlow(to: \.isSubmitting, on: self).store(in: &subscriptions)
  }

  /// Whether the form may be sent now. Computed from the fields themselves, not from `validation`
  /// (which follows them a main-actor hop later), and only with the availability of this very name.
  public var canSubmit: Bool {
    SignUpValidation(name: name, email: email, password: password).isValid
      && availability.value == NameAvailability(name: name, isAvailable: true)
  }

  /// Sends the form once: first wins, so that a second tap while the first request runs sends
  /// nothing (cancelling a write would not undo it).
  public func submit() {
    guard canSubmit else { return }
    let form = SignUp(name: name, email: email, password: password)
    let register = self.register
    slots.run(.submit, policy: .firstWins) { @MainActor [weak self] in
      let outcome: Result<String, SignUpError>
      do throws(SignUpError) {
        outcome = .success(try await register(form))
      } catch {
        outcome = .failure(error)
      }
      guard let self, !Task.isCancelled else { return }
      self.outcome = outcome
    }
  }
}
// endregion: sign-up-form-model
