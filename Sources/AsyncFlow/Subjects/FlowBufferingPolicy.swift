/// How many elements a subscriber of a hot source keeps while it is slower than the sender.
///
/// A bounded policy drops what does not fit, and counts it: each subscriber's count is its
/// iterator's `droppedCount` (``HotFlowIterator/droppedCount``) or its sink's
/// ``FlowSubscription/droppedCount``, and ``onDrop(_:)`` reports drops as they happen.
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
  /// Told how many elements an event dropped, after the source's lock (``onDrop(_:)``).
  @usableFromInline var dropHandler: (@Sendable (Int) -> Void)?

  @inlinable init(storage: Storage) {
    self.storage = storage
  }

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

  /// This policy, reporting each drop as it happens to `handler`, with how many elements the event
  /// dropped: a `send` (or a shared upstream's element) counts what it dropped over every
  /// subscriber, a `bufferFlow` or `Flow.callbacks` element what its buffer dropped (the oldest
  /// displaced, or the new one refused).
  ///
  /// `handler` is called in the sender's context (the caller of `send`, a shared upstream's task,
  /// a `bufferFlow`'s pulling task, the thread of a callbacks `send`), after the source has let go
  /// of its lock: it may send to the source, cancel a subscription, or read a count. It must not
  /// block, as `send` does not. A subscriber's own count, which stays readable after it ended, is
  /// its iterator's `droppedCount` or its sink's ``FlowSubscription/droppedCount``. Two policies
  /// are equal when they keep the same elements, whatever their handlers.
  ///
  /// ```swift
  /// import Synchronization
  /// let dropped = Atomic(0)
  /// let feed = PassthroughFlow<Int, Never>(
  ///   bufferingPolicy: .bufferingNewest(16).onDrop { count in dropped.add(count, ordering: .relaxed) })
  /// ```
  public func onDrop(_ handler: @escaping @Sendable (Int) -> Void) -> Self {
    var policy = self
    policy.dropHandler = handler
    return policy
  }

  /// Whether both keep the same elements; their drop handlers are not compared.
  ///
  /// ```swift
  /// #expect(FlowBufferingPolicy.bufferingNewest(1).onDrop { _ in } == .bufferingNewest(1))
  /// ```
  public static func == (lhs: Self, rhs: Self) -> Bool {
    lhs.storage == rhs.storage
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

  /// Adds `element` to `buffer` as this policy says, and returns how many elements it dropped
  /// (`element` itself, or older ones); what the policy drops from the buffer goes to `released`,
  /// to be let go after the caller's lock (a dropped element's `deinit` may call back into the
  /// source).
  @inlinable
  func append<Element>(
    _ element: Element, to buffer: inout RingBuffer<Element>, releasing released: inout ReleasedElements<Element>
  ) -> Int {
    switch storage {
    case .unbounded:
      buffer.append(element)
      return 0
    case .newest(let limit):
      guard limit > 0 else { return 1 }  // the caller still holds `element`: it is released after the lock
      // More than one only for a share whose replay is longer than this limit.
      var dropped = 0
      while buffer.count >= limit {
        released.append(buffer.popFirst()!)
        dropped &+= 1
      }
      buffer.append(element)
      return dropped
    case .oldest(let limit):
      guard buffer.count < limit else { return 1 }
      buffer.append(element)
      return 0
    }
  }
}
