#if canImport(Darwin)
  import Darwin
#elseif canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// `withUnsafeContinuation`, with the order ThreadSanitizer needs once it returns: every wait of
/// AsyncFlow's on a continuation goes through here.
///
/// The runtime tells the sanitizer that a resume happens before its task goes on (a release on
/// the task's address before the resume, an acquire there when the task next runs from an
/// executor), except on one path: a continuation resumed before its task has suspended lets the
/// task go on at once, with no acquire. Then what the resumer did (`resume()` reads the
/// continuation's context) looks unordered with what the task does next: its next wait writes a
/// new context at the same address, and the sanitizer reports a data race that is not one (the
/// runtime's atomic status orders them, out of the sanitizer's sight). A scratch program outside
/// AsyncFlow, one task parking its continuation under a pthread lock and another resuming it
/// after the lock, shows it in 3 runs of 12; with the acquire below, in none of 12. So the task
/// does the acquire itself, on its own address, where the sanitizer is loaded (elsewhere the
/// lookup finds nothing, once, and each wake costs a load and a branch).
@inlinable
func withOrderedContinuation<T: Sendable>(
  isolation: isolated (any Actor)? = #isolation, _ body: (UnsafeContinuation<T, Never>) -> Void
) async -> T {
  let value = await withUnsafeContinuation(isolation: isolation, body)
  SanitizerOrdering.acquireCurrentTask()
  return value
}

@usableFromInline
enum SanitizerOrdering {
  /// ThreadSanitizer's `__tsan_acquire`, if it is loaded.
  @usableFromInline
  static let acquire: (@convention(c) (UnsafeRawPointer?) -> Void)? = {
    #if canImport(Darwin)
      let everywhere = UnsafeMutableRawPointer(bitPattern: -2)  // RTLD_DEFAULT
    #else
      let everywhere: UnsafeMutableRawPointer? = nil  // RTLD_DEFAULT
    #endif
    guard let symbol = dlsym(everywhere, "__tsan_acquire") else { return nil }
    return unsafeBitCast(symbol, to: (@convention(c) (UnsafeRawPointer?) -> Void).self)
  }()

  /// The acquire the runtime does when a resumed task runs from an executor, on the same address
  /// (the task's), for a task that went on without suspending.
  @inlinable
  static func acquireCurrentTask() {
    guard let acquire else { return }
    withUnsafeCurrentTask { task in
      guard let task else { return }
      acquire(unsafeBitCast(task, to: UnsafeRawPointer.self))
    }
  }
}
