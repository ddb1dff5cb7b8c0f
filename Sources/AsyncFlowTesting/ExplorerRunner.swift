import AsyncFlow

/// Which entry points' tasks have returned, and what the model showed when one returned after
/// the cancellation point.
@MainActor
private final class StepProgress {
  var finished: [Bool]
  var hasLeft = false
  /// Seen by the entry point's own task, which still holds the model: once the explorer has let
  /// it go, that is the last moment its state can be read.
  var shownAfterLeaving: [String]?
  init(count: Int) { finished = Array(repeating: false, count: count) }
}

/// Runs an ``Exploration`` once, from a fresh model, making the choices an oracle gives.
///
/// Determinism comes from the explorer being the only one who moves anything: it makes one choice,
/// then waits until the clock has settled and nothing it can see changes, before the next. Between
/// two choices only the work that the last choice released can run, so the same choices give the
/// same run, main-actor steps included. Settling waits for the entry points on their way back too:
/// their steps run in `onSchedule`, whose way back the clock accounts for, so whether every entry
/// point returned is decided once it returns.
@MainActor
struct ExplorerRunner<Model: AnyObject> {
  struct Record {
    /// Per choice (the leave excluded): its position among the enabled choices, and their count.
    var positions: [Int] = []
    var counts: [Int] = []
    var order: [String] = []
    var timeline: [ExplorationEvent] = []
    var problems: [String] = []

    var failure: ExplorationFailure? {
      problems.isEmpty ? nil : ExplorationFailure(order: order.joined(separator: " "), problems: problems, timeline: timeline)
    }
  }

  let exploration: Exploration<Model>
  let budget: ExplorationBudget

  /// Everything one run changes.
  private struct Run {
    let run: ExplorationRun
    var model: Model?
    weak var watched: Model?
    var tasks: [Task<Void, Never>] = []
    let progress: StepProgress
    var nextStep = 0
    /// Per stub, the calls the explorer answered: an answer to a call older than one of them is
    /// out of order.
    var answered: [Int: Set<Int>] = [:]
    /// What the model shows, part by part, after the last choice.
    var shown: [String]?
    var point = 0
    var record = Record()
  }

  func run(_ oracle: inout some ExplorerOracle) async -> Record {
    let explorationRun = ExplorationRun(clock: TestClock())
    // The model lives in `state` only: a local would keep it alive past a cancellation point.
    var state = Run(
      run: explorationRun, model: await exploration.make(explorationRun), progress: StepProgress(count: exploration.steps.count))
    state.watched = state.model
    await state.run.clock.runCurrent()
    state.shown = shown(state)

    while true {
      let enabled = enabledChoices(state, steps: true)
      if enabled.isEmpty { break }
      if state.point >= budget.choicesPerRun {
        state.record.problems.append(
          "the run did not end within \(budget.choicesPerRun) choices (ExplorationBudget.choicesPerRun): "
            + "the model keeps starting calls or sleeping")
        break
      }
      let tokens = enabled.map { token($0, state) }
      guard let choice = oracle.choose(among: enabled, tokens: tokens, at: state.point) else {
        state.record.problems.append(
          "the scenario did not repeat itself at point \(state.point) (choices now: \(tokens.joined(separator: ", "))): "
            + "is every task on the run's clock (stubs through `run.stub`, flows started in `clock.onSchedule`)?")
        break
      }
      if choice == .leave {
        state.record.order.append("leave")
        await leave(&state)
        return state.record
      }
      state.record.positions.append(enabled.firstIndex(of: choice)!)
      state.record.counts.append(enabled.count)
      state.record.order.append(token(choice, state))
      await perform(choice, &state, afterLeaving: false)
    }
    await finish(&state)
    return state.record
  }

  // MARK: The end of a run

  /// The end of an order: every entry point returned, the invariants hold, and the model goes once
  /// the test lets it go.
  private func finish(_ state: inout Run) async {
    for (index, finished) in state.progress.finished.enumerated() where !finished {
      state.record.problems.append(
        "entry point '\(exploration.steps[index].name)' never returned: it waits for something the explorer does not answer")
    }
    for invariant in exploration.invariants where state.model.map({ invariant.holds($0) }) == false {
      state.record.problems.append("broken: \(invariant.name)" + (display(state.shown).map { "; \($0)" } ?? ""))
    }
    state.model = nil
    await state.run.clock.runCurrent()
    if state.watched != nil {
      state.record.problems.append(
        "the model is still alive once the run ended and the clock settled: a task or a subscription keeps it")
    }
  }

  /// A cancellation point: the screen goes away here. The entry points' tasks are cancelled and the
  /// model released; then the requests still on the wire are answered, one by one.
  private func leave(_ state: inout Run) async {
    let running = state.progress.finished.prefix(state.nextStep).count { !$0 }
    let action = "LEAVE: cancelled \(counted(running, "running entry point")), released the model"
    state.record.timeline.append(ExplorationEvent(point: state.point, token: "leave", action: action))
    let callsAtLeave = state.run.stubs.map { $0.count() }
    state.progress.hasLeft = true
    for task in state.tasks { task.cancel() }
    state.model = nil
    let shownAtLeave = state.shown
    await state.run.clock.runCurrent()
    noteWriteAfterLeaving(&state, by: "the cancellation itself", since: shownAtLeave)

    for stub in state.run.stubs where stub.answersCancellation {
      for call in stub.waiting() {
        state.record.problems.append(
          "\(stub.describe(call)) still waits after the release, though its stub answers cancellation: nobody cancelled it")
      }
    }
    for gate in state.run.gates where gate.gate.parkedCount > 0 {
      state.record.problems.append("gate '\(gate.name)' still has \(gate.gate.parkedCount) waiting after the release")
    }

    // Requests already sent come back even though nobody wants them any more.
    var drained = 0
    while drained < budget.choicesPerRun, let choice = enabledChoices(state, steps: false).first(where: { $0 != .advance }) {
      let before = state.shown
      await perform(choice, &state, afterLeaving: true)
      noteWriteAfterLeaving(&state, by: state.record.timeline.last!.action, since: before)
      drained += 1
    }

    for (index, stub) in state.run.stubs.enumerated() where stub.count() > callsAtLeave[index] {
      let late = (callsAtLeave[index]..<stub.count()).map(stub.describe)
      state.record.problems.append("called after the release: \(late.joined(separator: ", "))")
    }
    if state.watched != nil {
      state.record.problems.append(
        "the model is still alive after the release, with every call answered and the clock settled")
    }
    if state.run.clock.pendingSleepers > 0 {
      state.record.problems.append(
        "\(state.run.clock.pendingSleepers) sleeper(s) still wait on the clock after the release: a timer or a delay nobody cancelled")
    }
  }

  /// A part that changed since `before` is written after the release, whatever it wrote (a value
  /// it had before too: an error cleared by a stale answer), unless the test declared it as
  /// cleanup and it changed to its cleanup value (a spinner off, a flag cleared).
  private func noteWriteAfterLeaving(_ state: inout Run, by cause: String, since before: [String]?) {
    guard let before, let now = state.progress.shownAfterLeaving ?? state.shown, now != before else { return }
    let written = now.indices.filter { now[$0] != before[$0] && now[$0] != exploration.parts[$0].cleanup }
    guard !written.isEmpty, !state.record.problems.contains(where: { $0.hasPrefix("written after the release") }) else { return }
    state.record.problems.append("written after the release (\(cause)): \(display(before) ?? "") -> \(display(now) ?? "")")
  }

  /// The parts as one line, each named part as `name value`.
  private func display(_ values: [String]?) -> String? {
    guard let values else { return nil }
    return zip(exploration.parts, values).map { part, value in part.name.map { "\($0) \(value)" } ?? value }
      .joined(separator: " ")
  }

  // MARK: Choices

  private func enabledChoices(_ state: Run, steps: Bool) -> [ExplorerChoice] {
    var enabled: [ExplorerChoice] = []
    if steps, state.nextStep < exploration.steps.count { enabled.append(.step(state.nextStep)) }
    for (stub, registered) in state.run.stubs.enumerated() {
      for call in registered.waiting() {
        for response in 0..<registered.responses(call) { enabled.append(.answer(stub: stub, call: call, response: response)) }
      }
    }
    for (index, gate) in state.run.gates.enumerated() where gate.gate.parkedCount > 0 { enabled.append(.open(gate: index)) }
    if state.run.clock.pendingSleepers > 0 { enabled.append(.advance) }
    return enabled
  }

  private func token(_ choice: ExplorerChoice, _ state: Run) -> String {
    switch choice {
    case .step(let index): "s\(index)"
    case .answer(let stub, let call, let response): "\(state.run.stubs[stub].name)#\(call)" + (response > 0 ? ".\(response)" : "")
    case .open(let gate): "open:\(state.run.gates[gate].name)"
    case .advance: "tick"
    case .leave: "leave"
    }
  }

  /// Makes `choice`, waits for quiescence and adds it to the timeline.
  private func perform(_ choice: ExplorerChoice, _ state: inout Run, afterLeaving: Bool) async {
    var action: String
    var outOfOrder = false
    switch choice {
    case .step(let index):
      action = "run \(exploration.steps[index].name)"
      state.nextStep += 1
      if let model = state.model {
        let step = exploration.steps[index].action
        let (clock, progress, parts) = (state.run.clock, state.progress, exploration.parts)
        // Weak: a cancellation point releases the model; a task that has not reached its step by
        // then does nothing, as a `.task` of a view that is gone.
        state.tasks.append(
          Task { @MainActor [weak model] in
            guard let model else { return }
            await clock.onSchedule { await step(model) }
            progress.finished[index] = true
            if progress.hasLeft, !parts.isEmpty { progress.shownAfterLeaving = parts.map { $0.read(model) } }
          })
      }
    case .answer(let stub, let call, let response):
      let registered = state.run.stubs[stub]
      action = "answered \(registered.describe(call))" + (response > 0 ? " with response \(response)" : "")
      outOfOrder = state.answered[stub, default: []].contains { $0 > call }
      state.answered[stub, default: []].insert(call)
      registered.respond(call, response)
    case .open(let gate):
      action = "opened gate \(state.run.gates[gate].name)"
      state.run.gates[gate].gate.release()
    case .advance:
      action = "clock + \(exploration.timeStep)"
      await state.run.clock.advance(by: exploration.timeStep)
    case .leave:
      preconditionFailure("Internal inconsistency: leave is not performed, it ends the run")
    }
    await state.run.clock.runCurrent()
    let now = shown(state)
    let wrote = now != state.shown ? display(now) : nil
    state.shown = now
    state.record.timeline.append(
      ExplorationEvent(
        point: state.point, token: afterLeaving ? "" : token(choice, state),
        action: afterLeaving ? "after leaving: \(action)" : action, wrote: wrote,
        isStale: outOfOrder && wrote != nil))
    if !afterLeaving { state.point += 1 }
  }

  // MARK: Quiescence

  private func shown(_ state: Run) -> [String]? {
    guard !exploration.parts.isEmpty, let model = state.watched else { return nil }
    return exploration.parts.map { $0.read(model) }
  }
}
