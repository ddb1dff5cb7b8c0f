import AsyncFlow
import Foundation

/// The smallest synchronous `AsyncSequence`: the base of the stdlib chain in W1.
struct Counter: AsyncSequence, Sendable {
  let count: Int
  struct AsyncIterator: AsyncIteratorProtocol {
    var current = 0
    let count: Int
    mutating func next() async -> Int? {
      guard current < count else { return nil }
      defer { current += 1 }
      return current
    }
  }
  func makeAsyncIterator() -> AsyncIterator { AsyncIterator(count: count) }
}

/// `Counter` with `next(isolation:)` of its own, so that a main-actor consumer does not hop to the
/// global executor for each element: the floor for a main-actor `for await`.
struct IsolatedCounter: AsyncSequence, Sendable {
  let count: Int
  struct AsyncIterator: AsyncIteratorProtocol {
    var current = 0
    let count: Int
    mutating func next(isolation actor: isolated (any Actor)?) async -> Int? {
      guard current < count else { return nil }
      defer { current += 1 }
      return current
    }
    mutating func next() async -> Int? { await next(isolation: nil) }
  }
  func makeAsyncIterator() -> AsyncIterator { AsyncIterator(count: count) }
}

@inline(never)
func blackHole<T>(_ value: T) {}

// MARK: W0, W1: a chain of map and filter

func w0Loop(_ n: Int) -> (Int, String?) {
  var sum = 0
  for value in 0..<n {
    let doubled = value * 2
    if doubled % 3 != 0 { sum &+= doubled }
  }
  blackHole(sum)
  return (n, nil)
}

func w1Stdlib(_ n: Int) async -> (Int, String?) {
  let task = Task.detached {
    var sum = 0
    for await value in Counter(count: n).map({ $0 * 2 }).filter({ $0 % 3 != 0 }) { sum &+= value }
    return sum
  }
  blackHole(await task.value)
  return (n, nil)
}

func w1FlowSequence(_ n: Int) async -> (Int, String?) {
  let task = Task.detached {
    var sum = 0
    for await value in Flow.sequence(0..<n).map({ $0 * 2 }).filter({ $0 % 3 != 0 }) { sum &+= value }
    return sum
  }
  blackHole(await task.value)
  return (n, nil)
}

@MainActor
func w1FlowMainActor(_ n: Int) async -> (Int, String?) {
  var sum = 0
  for await value in Flow.sequence(0..<n).map({ $0 * 2 }).filter({ $0 % 3 != 0 }) { sum &+= value }
  blackHole(sum)
  return (n, nil)
}

/// The floor under any main-actor consumer: a minimal `AsyncSequence` that honours
/// `next(isolation:)`, no operator, consumed with `for await` in a `@MainActor` function.
@MainActor
func w1MainActorFloor(_ n: Int) async -> (Int, String?) {
  var sum = 0
  for await value in IsolatedCounter(count: n) { sum &+= value }
  blackHole(sum)
  return (n, nil)
}

func w1FlowBuilder(_ n: Int) async -> (Int, String?) {
  let task = Task.detached {
    var sum = 0
    let flow = Flow<Int, Never> { emitter in
      for value in 0..<n { await emitter.emit(value) }
    }
    for await value in flow.map({ $0 * 2 }).filter({ $0 % 3 != 0 }) { sum &+= value }
    return sum
  }
  blackHole(await task.value)
  return (n, nil)
}

func w1AsyncStream(_ n: Int) async -> (Int, String?) {
  let task = Task.detached {
    let (stream, continuation) = AsyncStream<Int>.makeStream()
    let producer = Task {
      for value in 0..<n { continuation.yield(value) }
      continuation.finish()
    }
    var sum = 0
    for await value in stream {
      let doubled = value * 2
      if doubled % 3 != 0 { sum &+= doubled }
    }
    await producer.value
    return sum
  }
  blackHole(await task.value)
  return (n, nil)
}

// MARK: W2: a hot source

func w2Passthrough(_ n: Int, subscribers: Int) async -> (Int, String?) {
  let subject = PassthroughFlow<Int, Never>()
  let received = await withTaskGroup(of: Int.self) { group in
    for _ in 0..<subscribers {
      let iterator = subject.makeAsyncIterator()
      group.addTask { [iterator] in
        var iterator = iterator
        var count = 0
        while await iterator.next() != nil { count += 1 }
        return count
      }
    }
    group.addTask {
      for value in 0..<n { subject.send(value) }
      subject.finish()
      return 0
    }
    return await group.reduce(0, +)
  }
  return (n, "delivered \(received)")
}

func w2AsyncStream(_ n: Int, subscribers: Int) async -> (Int, String?) {
  let streams = (0..<subscribers).map { _ in AsyncStream<Int>.makeStream() }
  let received = await withTaskGroup(of: Int.self) { group in
    for (stream, _) in streams {
      group.addTask {
        var count = 0
        for await _ in stream { count += 1 }
        return count
      }
    }
    group.addTask {
      for value in 0..<n {
        for (_, continuation) in streams { continuation.yield(value) }
      }
      for (_, continuation) in streams { continuation.finish() }
      return 0
    }
    return await group.reduce(0, +)
  }
  return (n, "delivered \(received)")
}

func w2CurrentValue(_ n: Int) async -> (Int, String?) {
  let subject = CurrentValueFlow(-1)
  // Made (so subscribed) before the first send, and held by the consumer only: only it subscribes.
  // (A local iterator reassigned with a second one kept that one subscribed through the sends: the
  // locks they take end no lifetime early.)
  let consumer = Task { [iterator = subject.makeAsyncIterator()] in
    var iterator = iterator
    var count = 0
    while await iterator.next() != nil { count += 1 }
    return count
  }
  for value in 0..<n { subject.send(value) }
  subject.finish()
  let seen = await consumer.value
  return (n, "seen \(seen) of \(n + 1) (conflated)")
}

// MARK: W3: switch to latest

func w3SwitchToLatest(_ n: Int) async -> (Int, String?) {
  let task = Task.detached {
    var delivered = 0
    for await _ in Flow.sequence(0..<n).switchToLatestFlow({ value in Flow.sequence([value, value, value]) }) {
      delivered += 1
    }
    return delivered
  }
  let delivered = await task.value
  return (n, "inner values delivered \(delivered)")
}

func w3Naive(_ n: Int) async -> (Int, String?) {
  let (results, output) = AsyncStream<Int>.makeStream()
  let task = Task.detached {
    var current: Task<Void, Never>?
    for value in 0..<n {
      current?.cancel()
      current = Task {
        for inner in [value, value, value] {
          if Task.isCancelled { return }
          output.yield(inner)
        }
      }
    }
    await current?.value
    output.finish()
  }
  var delivered = 0
  for await _ in results { delivered += 1 }
  await task.value
  return (n, "inner values delivered \(delivered)")
}

// MARK: W4: merge

func w4Merge(_ n: Int) async -> (Int, String?) {
  let half = n / 2
  let task = Task.detached {
    var count = 0
    let sources = [Flow.sequence(0..<half), Flow.sequence(0..<half)]
    for await _ in Flow.sequence(sources).mergeFlow({ $0 }) { count += 1 }
    return count
  }
  let count = await task.value
  return (2 * half, "merged \(count)")
}

func w4AsyncStream(_ n: Int) async -> (Int, String?) {
  let half = n / 2
  let (stream, continuation) = AsyncStream<Int>.makeStream()
  let producers = Task.detached {
    await withTaskGroup(of: Void.self) { group in
      for _ in 0..<2 { group.addTask { for value in 0..<half { continuation.yield(value) } } }
    }
    continuation.finish()
  }
  var count = 0
  for await _ in stream { count += 1 }
  await producers.value
  return (2 * half, "merged \(count)")
}

// MARK: W5: idle subscribers

// Every W5 row is measured the same way: resident memory before, then the subscribers, then
// resident memory once it has stopped growing (`settledResidentBytes`). No subscriber signals
// from inside its task that it has started: a signal costs memory of its own, which the row would
// then charge to the subscriber (a yield into a second `AsyncStream` from each task made
// `W5.asyncStream` 2,760 B instead of 1,705 B).

func w5Passthrough(_ count: Int) async -> Double {
  let subject = PassthroughFlow<Int, Never>()
  var tasks: [Task<Void, Never>] = []
  tasks.reserveCapacity(count)
  let before = residentBytes()
  for _ in 0..<count {
    let iterator = subject.makeAsyncIterator()
    tasks.append(
      Task { [iterator] in
        var iterator = iterator
        _ = await iterator.next()
      })
  }
  let after = await settledResidentBytes()
  subject.finish()
  for task in tasks { await task.value }
  return (after - before) / Double(count)
}

/// What a task costs that does nothing but wait: the floor under any "subscriber parked in a task".
func w5ParkedTasks(_ count: Int) async -> Double {
  let parked = ParkedContinuations(capacity: count)
  var tasks: [Task<Void, Never>] = []
  tasks.reserveCapacity(count)
  let before = residentBytes()
  for _ in 0..<count {
    tasks.append(Task { await withUnsafeContinuation { parked.append($0) } })
  }
  let after = await settledResidentBytes()
  while parked.count < count { await Task.yield() }
  parked.resumeAll()
  for task in tasks { await task.value }
  return (after - before) / Double(count)
}

/// Where the parked tasks leave their continuations, in storage allocated and touched before the
/// measurement starts, so that the floor row charges nothing but the tasks.
final class ParkedContinuations: @unchecked Sendable {
  private let lock = NSLock()
  private let capacity: Int
  private let continuations: UnsafeMutablePointer<UnsafeContinuation<Void, Never>?>
  private var stored = 0

  init(capacity: Int) {
    self.capacity = capacity
    continuations = .allocate(capacity: capacity)
    continuations.initialize(repeating: nil, count: capacity)
  }

  deinit {
    continuations.deinitialize(count: capacity)
    continuations.deallocate()
  }

  func append(_ continuation: UnsafeContinuation<Void, Never>) {
    lock.withLock {
      continuations[stored] = continuation
      stored += 1
    }
  }

  var count: Int { lock.withLock { stored } }

  func resumeAll() {
    let resumed = lock.withLock { () -> [UnsafeContinuation<Void, Never>] in
      (0..<stored).compactMap { index in continuations[index].take() }
    }
    for continuation in resumed { continuation.resume() }
  }
}

func w5PassthroughIterators(_ count: Int) async -> Double {
  let subject = PassthroughFlow<Int, Never>()
  var iterators: [PassthroughFlow<Int, Never>.Iterator] = []
  iterators.reserveCapacity(count)
  let before = residentBytes()
  for _ in 0..<count { iterators.append(subject.makeAsyncIterator()) }
  let after = await settledResidentBytes()
  blackHole(iterators.count)
  return (after - before) / Double(count)
}

func w5AsyncStream(_ count: Int) async -> Double {
  var continuations: [AsyncStream<Int>.Continuation] = []
  var tasks: [Task<Void, Never>] = []
  continuations.reserveCapacity(count)
  tasks.reserveCapacity(count)
  let before = residentBytes()
  for _ in 0..<count {
    let (stream, continuation) = AsyncStream<Int>.makeStream()
    continuations.append(continuation)
    tasks.append(Task { for await _ in stream {} })
  }
  let after = await settledResidentBytes()
  for continuation in continuations { continuation.finish() }
  for task in tasks { await task.value }
  return (after - before) / Double(count)
}

// MARK: W6: cancel and replace

// Runs come in bursts of `w6Burst`, each awaited before the next: a burst's tasks are cancelled
// and replaced faster than they end, as typing does, but no more than a burst of them is alive at
// once. A single burst of 100,000 left the figure to the thread pool's luck: run to run, either a
// second thread ran the tasks as they came, or all 100,000 piled up (150 MB of task memory and its
// page faults) and ran after the loop; the naive row alone moved by 2 × between runs.
let w6Burst = 1_000

func w6TaskSlots(_ n: Int) async -> (Int, String?) {
  let slots = TaskSlots<Int>()
  var last: Task<Void, Never>?
  for start in stride(from: 0, to: n, by: w6Burst) {
    for _ in start..<min(start + w6Burst, n) { last = slots.run(0) {} }
    await last?.value
  }
  return (n, nil)
}

/// W6 with the request log on, each run named by a trigger: the cost of leaving the log on in an app.
func w6TaskSlotsLogged(_ n: Int) async -> (Int, String?) {
  let log = RequestLog<Int>()
  let slots = TaskSlots<Int>(log: log)
  var last: Task<Void, Never>?
  for start in stride(from: 0, to: n, by: w6Burst) {
    for _ in start..<min(start + w6Burst, n) { last = slots.run(0, trigger: "tap") {} }
    await last?.value
  }
  return (n, "entries kept \(log.entries.count)")
}

func w6Naive(_ n: Int) async -> (Int, String?) {
  var current: Task<Void, Never>?
  for start in stride(from: 0, to: n, by: w6Burst) {
    for _ in start..<min(start + w6Burst, n) {
      current?.cancel()
      current = Task {}
    }
    await current?.value
  }
  return (n, nil)
}

// MARK: W7: combining two inputs

func w7CombineLatest(_ n: Int) async -> (Int, String?) {
  let half = n / 2
  let task = Task.detached {
    var count = 0
    for await _ in Flow.combineLatest(Flow.sequence(0..<half), Flow.sequence(0..<half)) { count += 1 }
    return count
  }
  let count = await task.value
  return (2 * half, "tuples \(count)")
}

func w7Zip(_ n: Int) async -> (Int, String?) {
  let half = n / 2
  let task = Task.detached {
    var count = 0
    for await _ in Flow.zip(Flow.sequence(0..<half), Flow.sequence(0..<half)) { count += 1 }
    return count
  }
  let count = await task.value
  return (2 * half, "tuples \(count)")
}

/// Each element of one sequence paired with the latest of the other: the other is read as fast as
/// it produces, the base ahead of the consumer; per input element, as the rows above.
func w7WithLatestFrom(_ n: Int) async -> (Int, String?) {
  let half = n / 2
  let task = Task.detached {
    var count = 0
    for await _ in Flow.sequence(0..<half).withLatestFromFlow(Flow.sequence(0..<half)) { count += 1 }
    return count
  }
  let count = await task.value
  return (2 * half, "pairs \(count)")
}

/// Combine-latest by hand: two tasks of a task group update the latest pair under a lock and yield
/// it into one `AsyncStream` once both have produced.
func w7Naive(_ n: Int) async -> (Int, String?) {
  let half = n / 2
  let (stream, continuation) = AsyncStream<(Int, Int)>.makeStream()
  let latest = NSLock()
  nonisolated(unsafe) var pair: (Int?, Int?) = (nil, nil)
  let producers = Task.detached {
    await withTaskGroup(of: Void.self) { group in
      for side in 0..<2 {
        group.addTask {
          for value in 0..<half {
            latest.withLock {
              if side == 0 { pair.0 = value } else { pair.1 = value }
              if let a = pair.0, let b = pair.1 { continuation.yield((a, b)) }
            }
          }
        }
      }
    }
    continuation.finish()
  }
  var count = 0
  for await _ in stream { count += 1 }
  await producers.value
  return (2 * half, "tuples \(count)")
}
