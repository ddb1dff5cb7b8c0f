/// How many elements a subscriber of a hot source keeps while it is slower than the sender.
///
/// ```swift
/// let positions = PassthroughFlow<SIMD2<Double>, Never>(bufferingPolicy: .bufferingNewest(1))   // a drag
/// ```
public struct FlowBufferingPolicy: Sendable, Equatable, CustomStringConvertible {
  @usableFromInline
  enum Storage: Sendable, Equatable {
    case unbounded
    case newest(Int)
    case oldest(Int)
  }

  @usableFromInline let storage: Storage

  /// Keeps every element: nothing is lost, and memory grows with the subscriber's backlog.
  ///
  /// ```swift
  /// let events = PassthroughFlow<String, Never>(bufferingPolicy: .unbounded)   // analytics: none lost
  /// ```
  public static var unbounded: Self { Self(storage: .unbounded) }

  /// Keeps the newest `limit` elements, dropping older ones: for state, where only the latest
  /// matters. The bound counts every element the subscriber has not received yet, so after
  /// falling behind it receives nothing older than the newest `limit`.
  ///
  /// ```swift
  /// let progress = PassthroughFlow<Double, Never>(bufferingPolicy: .bufferingNewest(1))
  /// ```
  public static func bufferingNewest(_ limit: Int) -> Self {
    precondition(limit >= 0, "FlowBufferingPolicy.bufferingNewest(_:): limit must be 0 or greater, got \(limit)")
    return Self(storage: .newest(limit))
  }

  /// Keeps the oldest `limit` elements, dropping newer ones until the subscriber catches up. The
  /// bound counts every element the subscriber has not received yet.
  ///
  /// ```swift
  /// enum Command: Sendable { case play, pause, seek(Double) }
  /// let commands = PassthroughFlow<Command, Never>(bufferingPolicy: .bufferingOldest(100))
  /// ```
  public static func bufferingOldest(_ limit: Int) -> Self {
    precondition(limit >= 0, "FlowBufferingPolicy.bufferingOldest(_:): limit must be 0 or greater, got \(limit)")
    return Self(storage: .oldest(limit))
  }

  /// The policy as written in code, as in `.bufferingNewest(1)`.
  ///
  /// ```swift
  /// print(FlowBufferingPolicy.unbounded)  // .unbounded
  /// ```
  public var description: String {
    switch storage {
    case .unbounded: ".unbounded"
    case .newest(let limit): ".bufferingNewest(\(limit))"
    case .oldest(let limit): ".bufferingOldest(\(limit))"
    }
  }

  /// Whether the policy bounds the buffer: then a subscriber takes one element at a time, so that
  /// the bound counts every element it has not received yet.
  @inlinable
  var isBounded: Bool {
    if case .unbounded = storage { return false }
    return true
  }

  /// Adds `element` to `buffer` as this policy says; what the policy drops goes to `released`, to
  /// be let go after the caller's lock (a dropped element's `deinit` may call back into the source).
  @inlinable
  func append<Element>(
    _ element: Element, to buffer: inout RingBuffer<Element>, releasing released: inout ReleasedElements<Element>
  ) {
    switch storage {
    case .unbounded:
      buffer.append(element)
    case .newest(let limit):
      guard limit > 0 else { return }  // the caller still holds `element`: it is released after the lock
      // More than one only for a share whose replay is longer than this limit.
      while buffer.count >= limit { released.append(buffer.popFirst()!) }
      buffer.append(element)
    case .oldest(let limit):
      if buffer.count < limit { buffer.append(element) }
    }
  }
}
