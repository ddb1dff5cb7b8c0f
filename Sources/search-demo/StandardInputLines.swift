import Foundation

/// The lines of standard input, as an `AsyncSequence`, read on a thread of their own.
///
/// `readLine()` blocks until the user presses return. Called from the main actor (top-level code
/// runs there) it would stop every task on the main actor, the printing included, until the input
/// ended; called from a task it would hold one of the few threads of the cooperative pool. A
/// dedicated thread blocks nobody, and hands each line over as it arrives.
struct StandardInputLines: AsyncSequence, Sendable {
  typealias Element = String
  typealias Failure = Never

  func makeAsyncIterator() -> AsyncStream<String>.Iterator {
    // Unbounded, but never larger than what the user has typed and the pipelines not yet taken.
    let (lines, continuation) = AsyncStream.makeStream(of: String.self)
    let reader = Thread {
      while let line = readLine() { continuation.yield(line) }
      continuation.finish()
    }
    reader.start()
    return lines.makeAsyncIterator()
  }
}
