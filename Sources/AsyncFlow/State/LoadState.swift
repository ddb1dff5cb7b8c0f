/// The state of a load, with its failure as a value: what a screen shows while it loads, after it
/// loaded, and after it failed.
///
/// Modelling the failure as a value keeps a long-lived stream alive: a sequence of `LoadState`
/// has `Failure == Never`, so one failed request shows `.failed` and the next one can still
/// show `.loaded`.
///
/// ```swift
/// for await state in api.search("swift").asLoadState() {
///   switch state {
///   case .idle: break
///   case .loading: print("searching…")
///   case .loaded(let results): print("\(results.count) results")
///   case .failed(let error): print("search failed: \(error)")
///   }
/// }
/// ```
public enum LoadState<Value, Failure: Error> {
  /// Nothing has been asked for yet.
  case idle
  /// A load is in flight.
  case loading
  /// The load delivered `Value`.
  case loaded(Value)
  /// The load failed with `Failure`.
  case failed(Failure)

  /// The state of a load whose outcome is at hand: `.loaded` for a success, `.failed` for a
  /// failure, as when a `Task`'s `result` or a callback's `Result` is shown.
  ///
  /// ```swift
  /// let result = await Task { try await api.articles(page: 1) }.result
  /// let state = LoadState(result)  // LoadState<[Item], any Error>: .loaded(articles) or .failed(error)
  /// ```
  public init(_ result: Result<Value, Failure>) {
    switch result {
    case .success(let value): self = .loaded(value)
    case .failure(let failure): self = .failed(failure)
    }
  }

  /// The loaded value, or `nil` in every other state.
  ///
  /// ```swift
  /// let rows = state.value ?? []
  /// ```
  public var value: Value? {
    if case .loaded(let value) = self { return value }
    return nil
  }

  /// The failure, or `nil` in every other state.
  ///
  /// ```swift
  /// if let error = state.failure { print(error) }
  /// ```
  public var failure: Failure? {
    if case .failed(let failure) = self { return failure }
    return nil
  }

  /// Whether a load is in flight.
  ///
  /// ```swift
  /// let showsSpinner = state.isLoading
  /// ```
  public var isLoading: Bool {
    if case .loading = self { return true }
    return false
  }
}

extension LoadState: Sendable where Value: Sendable, Failure: Sendable {}
extension LoadState: Equatable where Value: Equatable, Failure: Equatable {}
extension LoadState: Hashable where Value: Hashable, Failure: Hashable {}
