import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// `Flow.callbacks` ends when it is told to, whatever its setup is doing: every cell of setup
/// (still running, returned) × source (open, finished, failed) × consumer (waiting, cancelled,
/// released), on the test clock and on real threads. In each, the setup still running is
/// cancelled at once once the source ends or the consumer leaves; the cleanup runs once,
/// uncancelled, after the setup returned; the consumer's end comes only after it.
@Suite("Flow.callbacks: the end, whatever the setup is doing", .hangGuard)
struct CallbacksEndGridTests {
  enum Setup: CaseIterable, Sendable { case running, returned }
  enum Source: CaseIterable, Sendable { case open, finished, failed }
  enum Consumer: CaseIterable, Sendable { case waiting, cancelled, released }

  struct Cell: Sendable, CustomTestStringConvertible {
    var setup: Setup
    var source: Source
    var consumer: Consumer
    var onClock: Bool
    var testDescription: String {
      "setup \(setup), source \(source), consumer \(consumer), \(onClock ? "clock" : "threads")"
    }
  }

  static let cells: [Cell] = Setup.allCases.flatMap { setup in
    Source.allCases.flatMap { source in
      Consumer.allCases.flatMap { consumer in
        [true, false].map { Cell(setup: setup, source: source, consumer: consumer, onClock: $0) }
      }
    }
  }

  @Test(arguments: cells)
  func theEndComesOnceTheSetupReturnedAndTheCleanupRan(_ cell: Cell) async {
    let clock = TestClock()
    let log = EventLog<String>()
    let handed = LockedState<FlowCallbacks<Int, TestError>?>(nil)
    let connecting = Gate()
    let setupEnded = Signal()
    let cleanedUp = Signal()
    let received = Signal()
    let released = Gate()
    let flow = Flow<Int, TestError>.callbacks(bufferingPolicy: .unbounded) { callbacks in
      handed.withLock { $0 = callbacks }
      callbacks.send(1)
      if cell.setup == .running {
        await connecting.wait()  // leaves when the setup's task is cancelled
        log.append("setup cancelled: \(Task.isCancelled)")
      }
      setupEnded.fire()
      return {
        log.append("cleanup cancelled: \(Task.isCancelled)")
        cleanedUp.fire()
      }
    }
    let consume: @Sendable () async -> Void = {
      var iterator = flow.makeAsyncIterator()
      do throws(TestError) {
        while let element = try await iterator.next() {
          log.append("got \(element)")
          received.fire()
          if cell.consumer == .released {
            await released.wait()
            return  // the iterator is released, its task not cancelled
          }
        }
        log.append("end")
      } catch {
        log.append("failed \(error.id)")
      }
    }
    let consumer = cell.onClock ? clock.task(consume) : Task(operation: consume)
    let settle: @Sendable () async -> Void = { if cell.onClock { await clock.runCurrent() } }

    // The consumer has the first element, and waits for the next (or at the gate, to be released).
    await bounded("the first element") { await received.wait() }
    if cell.setup == .running { await connecting.entered() }
    if cell.consumer == .released { await released.entered() }
    await settle()
    guard let callbacks = handed.withLock({ $0 }) else {
      Issue.record("the setup never ran")
      return
    }

    switch cell.source {
    case .open: break
    case .finished: callbacks.finish()
    case .failed: callbacks.fail(TestError(id: 7))
    }
    await settle()
    if cell.source == .open, cell.consumer == .waiting {
      // Nothing ends it: the setup still runs uncancelled, the consumer waits.
      #expect(!log.all.contains { $0.hasPrefix("setup cancelled") || $0.hasPrefix("cleanup") || $0 == "end" })
      if cell.setup == .running { #expect(connecting.parkedCount == 1) }
    }

    switch cell.consumer {
    case .waiting where cell.source == .open, .cancelled: consumer.cancel()
    case .waiting: break
    case .released: released.release()
    }
    await bounded(consumer, "the consumer")
    await bounded("the setup's end") { await setupEnded.wait() }
    await bounded("the cleanup") { await cleanedUp.wait() }
    await settle()

    let events = log.all
    let setupEvents = cell.setup == .running ? ["setup cancelled: true"] : []
    #expect(events.filter { $0.hasPrefix("setup") } == setupEvents, "\(events)")
    #expect(events.filter { $0.hasPrefix("cleanup") } == ["cleanup cancelled: false"], "\(events)")
    let consumerEvents = events.filter { !$0.hasPrefix("setup") && !$0.hasPrefix("cleanup") }
    switch cell.consumer {
    case .released:
      #expect(consumerEvents == ["got 1"], "\(events)")
    case .waiting where cell.source == .failed:
      #expect(consumerEvents == ["got 1", "failed 7"], "\(events)")
    case .cancelled where cell.source == .failed && !cell.onClock:
      // On real threads the failure may reach the consumer before its cancellation does.
      #expect(consumerEvents == ["got 1", "end"] || consumerEvents == ["got 1", "failed 7"], "\(events)")
    case .waiting, .cancelled:
      #expect(consumerEvents == ["got 1", cell.source == .failed ? "failed 7" : "end"], "\(events)")
    }
    // The consumer's end comes after the cleanup, which comes after the setup returned.
    if let end = events.firstIndex(where: { $0 == "end" || $0.hasPrefix("failed") }) {
      #expect(events.firstIndex { $0.hasPrefix("cleanup") }! < end, "\(events)")
    }
    if cell.setup == .running {
      #expect(events.firstIndex { $0.hasPrefix("setup") }! < events.firstIndex { $0.hasPrefix("cleanup") }!)
    }
    #expect(callbacks.send(2) == false)
  }

  /// The example of the report: a setup that finishes, then sleeps, used to outlive its consumer,
  /// even a cancelled one.
  @Test func aFinishedSetupThatStillSleepsIsCancelled() async {
    let clock = TestClock()
    let flow = Flow<Int, Never>.callbacks { callbacks in
      callbacks.finish()
      try? await clock.sleep(for: .seconds(3600))  // ends only when cancelled
      return {}
    }
    let consumer = clock.task { () -> Int in
      var count = 0
      for await _ in flow { count += 1 }
      return count
    }
    #expect(await bounded(consumer, "the consumer") == 0)
    #expect(clock.now == .init(offset: .zero))
  }
}
