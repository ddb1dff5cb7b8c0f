extension Flow {
  /// A flow bridged from a callback API, buffering `.bufferingOldest(64)` by default: bounded, so
  /// a source that outpaces its consumer cannot grow memory without limit, and the oldest kept,
  /// as Kotlin's `callbackFlow` (64 elements, `trySend` fails when full), so a `send` that finds
  /// the buffer full reports that very element as dropped.
  ///
  /// Cold, as a ``Flow`` body: each iteration runs `setup` once, when its first `next()` starts it,
  /// in a task the iteration owns. `setup` hooks the callbacks up to the ``FlowCallbacks`` it is
  /// given and returns the cleanup that unhooks them. The callbacks may call `send`, `finish` and
  /// `fail` from any thread, at once (even from inside `setup`); they never block, and what comes
  /// after the end is ignored.
  ///
  /// ```swift
  /// struct Quote: Sendable { var symbol: String; var price: Double }
  /// struct SocketError: Error {}
  /// final class QuoteSocket: @unchecked Sendable {  // a callback API, calling back on its own queue
  ///   var onMessage: @Sendable (Quote) -> Void = { _ in }
  ///   var onError: @Sendable (SocketError) -> Void = { _ in }
  ///   var onClose: @Sendable () -> Void = {}
  ///   func connect() {}
  ///   func disconnect() {}
  /// }
  /// let socket = QuoteSocket()
  /// let quotes = Flow<Quote, SocketError>.callbacks { callbacks in
  ///   socket.onMessage = { callbacks.send($0) }
  ///   socket.onError = { callbacks.fail($0) }
  ///   socket.onClose = { callbacks.finish() }
  ///   socket.connect()
  ///   return { socket.disconnect() }
  /// }
  /// ```
  ///
  /// The cleanup runs exactly once, whatever ends the iteration: `finish` or `fail` (at once, while
  /// the consumer still drains the buffer), the consumer's task being cancelled (the buffered
  /// elements are discarded), or its iterator being released, as when it breaks out of its loop.
  /// When the consumer is cancelled or the source ends, its `next()` returns `nil` (or throws the
  /// failure) only after the cleanup has run; when the iterator is released, the cleanup runs in
  /// the iteration's task, soon after. If the consumer is cancelled or released, or the source
  /// ends (`finish`, `fail`), while `setup` still runs, that task is cancelled at once, which an
  /// `async` setup sees; the cleanup then runs as soon as `setup` returns, itself uncancelled.
  ///
  /// `setup` runs on the isolation it was written in, as a `Task { }` closure does: written in a
  /// `@MainActor` model, it runs on the main actor, so a `@MainActor` socket is set up there
  /// (elsewhere, mark it: `{ @MainActor callbacks in ... }`). The cleanup is `@Sendable` and
  /// `@isolated(any)`: mark it too, and it runs there as well.
  ///
  /// ```swift
  /// @MainActor final class MainActorSocket {  // a callback API of the main actor
  ///   var onMessage: (Quote) -> Void = { _ in }
  ///   func connect() {}
  ///   func disconnect() {}
  /// }
  /// @MainActor func liveQuotes(from socket: MainActorSocket) -> Flow<Quote, SocketError> {
  ///   Flow.callbacks { callbacks in  // on the main actor
  ///     socket.onMessage = { callbacks.send($0) }
  ///     socket.connect()
  ///     return { @MainActor in socket.disconnect() }
  ///   }
  /// }
  /// ```
  ///
  /// - Parameters:
  ///   - bufferingPolicy: What the iteration keeps while the consumer is behind, counting every
  ///     element it has not received yet, as a ``PassthroughFlow`` subscriber's buffer does.
  ///     `.unbounded` loses nothing; `.bufferingNewest(n)` suits state (quotes, positions).
  ///   - setup: Hooks the callbacks up and returns the cleanup. It cannot throw: a setup that fails
  ///     calls ``FlowCallbacks/fail(_:)`` and returns the cleanup of what it already hooked up, so
  ///     that there always is one to run.
  public static func callbacks(
    bufferingPolicy: FlowBufferingPolicy = .bufferingOldest(64),
    @_inheritActorContext _ setup:
      @escaping @Sendable @isolated(any) (FlowCallbacks<Element, Failure>) async ->
      @Sendable @isolated(any) () async -> Void
  ) -> Flow {
    Flow {
      let logic = BufferLogic<Element, Failure>(policy: bufferingPolicy, isPulled: false)
      let storage = CallbacksStorage(logic: logic, clock: TimelessClock(), onDrop: bufferingPolicy.dropHandler)
      // The task runs the setup, waits for the end (or the consumer leaving), then runs the cleanup.
      let consumer = OperatorConsumer(storage) { storage in
        let cleanup = await setup(FlowCallbacks(storage: storage))
        _ = await storage.inputWanted()
        // An end or a consumer that came while the setup ran cancelled this task, so that the
        // setup saw it: the cleanup still runs uncancelled, in a task of its own that is awaited
        // here (no work outlives the iteration).
        guard Task.isCancelled else { return await cleanup() }
        await FlowScheduling.startTask { await cleanup() }.value
      }
      return .async { (actor: isolated (any Actor)?) async throws(Failure) -> Element? in
        try await consumer.next(isolation: actor)
      }
    }
  }
}

/// One iteration of a callbacks flow: the callbacks push into a buffer on the one operator life
/// cycle; its task runs the setup, waits for the end, then runs the cleanup, uncancelled.
typealias CallbacksStorage<Element: Sendable, Failure: Error> =
  OperatorStorage<BufferLogic<Element, Failure>, TimelessClock>

/// What the callbacks of a bridged API call to feed one iteration of a
/// ``Flow/callbacks(bufferingPolicy:_:)`` flow: the verbs of ``PassthroughFlow``. Synchronous,
/// thread-safe, and never blocking, so a callback on any thread or queue can call them.
///
/// ```swift
/// final class ChatClient: Sendable {  // a callback API with listener tokens
///   func addListener(_ listener: @escaping @Sendable (String) -> Void) -> Int { 0 }
///   func removeListener(_ token: Int) {}
/// }
/// let chat = ChatClient()
/// let messages = Flow<String, Never>.callbacks(bufferingPolicy: .unbounded) { callbacks in
///   let token = chat.addListener { callbacks.send($0) }
///   return { chat.removeListener(token) }
/// }
/// ```
public struct FlowCallbacks<Element: Sendable, Failure: Error>: Sendable {
  let storage: CallbacksStorage<Element, Failure>

  /// Delivers `element` to the consumer, through the buffer; returns whether it will reach it.
  ///
  /// `false` means it never will: the source has ended or the consumer has left (so the callback
  /// API may be stopped), or the buffer is full under `.bufferingOldest`. Under `.bufferingNewest`
  /// the oldest buffered element gives way instead, and `element` is kept: a policy made with
  /// ``FlowBufferingPolicy/onDrop(_:)`` is told of either drop as it happens. A callback cannot
  /// wait for room: count the drop, log it, or ignore it (the result is discardable).
  ///
  /// ```swift
  /// let latest = Flow<Quote, SocketError>.callbacks(bufferingPolicy: .bufferingOldest(8)) { callbacks in
  ///   socket.onMessage = { quote in
  ///     if !callbacks.send(quote) { print("dropped \(quote.symbol)") }  // the buffer is full
  ///   }
  ///   return { socket.disconnect() }
  /// }
  /// ```
  @discardableResult
  public func send(_ element: Element) -> Bool {
    storage.input(element)
  }

  /// Ends the source: the consumer receives what is buffered, then finishes once the cleanup has
  /// run. The cleanup starts at once, or, while an `async` setup still runs, as soon as it returns:
  /// the setup's task is cancelled at once. Ignored after the end.
  ///
  /// ```swift
  /// let untilClosed = Flow<Quote, SocketError>.callbacks { callbacks in
  ///   socket.onClose = { callbacks.finish() }
  ///   return { socket.disconnect() }
  /// }
  /// ```
  public func finish() {
    storage.inputEnded(nil, fromItsOwnCode: false)
  }

  /// Ends the source with `error`: the consumer receives what is buffered, then the failure once
  /// the cleanup has run. The cleanup starts at once, or, while an `async` setup still runs, as
  /// soon as it returns: the setup's task is cancelled at once. Ignored after the end.
  ///
  /// ```swift
  /// let failing = Flow<Quote, SocketError>.callbacks { callbacks in
  ///   socket.onError = { callbacks.fail($0) }
  ///   return { socket.disconnect() }
  /// }
  /// ```
  public func fail(_ error: Failure) {
    storage.inputEnded(error, fromItsOwnCode: false)
  }
}
