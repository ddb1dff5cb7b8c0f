import AsyncFlow

public typealias Search = @Sendable (String) async -> [String]
public typealias LoadDetails = @Sendable (_ row: Int, _ version: Int) async -> String
public typealias Submit = @Sendable (String) async -> Void

// region: naive-search-screen
/// As people first write it: every keystroke, row and tap starts its own task.
@MainActor
public final class NaiveSearchScreen {
  public private(set) var results: [String] = []
  public private(set) var details: [Int: String] = [:]
  public private(set) var submissions = 0
  private let search: Search
  private let loadDetails: LoadDetails
  private let submit: Submit

  public init(search: @escaping Search, loadDetails: @escaping LoadDetails, submit: @escaping Submit) {
    (self.search, self.loadDetails, self.submit) = (search, loadDetails, submit)
  }

  public func queryChanged(_ query: String) { Task { results = await search(query) } }
  public func showDetails(row: Int, version: Int) { Task { details[row] = await loadDetails(row, version) } }
  public func submitTapped(_ text: String) {
    Task {
      await submit(text)
      submissions += 1
    }
  }
}
// endregion: naive-search-screen

// region: fixed-search-screen
/// Fixed: one live search (latest wins), one live detail load per row, and a submit that is first
/// wins.
@MainActor
public final class SearchScreen {
  public enum Work: Hashable, Sendable {
    case search
    case details(row: Int)
    case submit
  }

  public private(set) var results: [String] = []
  public private(set) var details: [Int: String] = [:]
  public private(set) var submissions = 0
  public let slots = TaskSlots<Work>()
  private let search: Search
  private let loadDetails: LoadDetails
  private let submit: Submit

  public init(search: @escaping Search, loadDetails: @escaping LoadDetails, submit: @escaping Submit) {
    (self.search, self.loadDetails, self.submit) = (search, loadDetails, submit)
  }

  public func queryChanged(_ query: String) {
    let search = self.search
    slots.run(.search) { @MainActor [weak self] in
      let found = await search(query)
      guard let self, !Task.isCancelled else { return }
      self.results = found
    }
  }

  public func showDetails(row: Int, version: Int) {
    // Per-row identity: a newer request for row 3 replaces row 3's, never row 4's.
    let loadDetails = self.loadDetails
    slots.run(.details(row: row)) { @MainActor [weak self] in
      let text = await loadDetails(row, version)
      guard let self, !Task.isCancelled else { return }
      self.details[row] = text
    }
  }

  public func submitTapped(_ text: String) {
    // First wins, and never latest wins: cancelling a write does not undo it. The first request
    // may already have reached the server; cancelling it and sending again could submit twice.
    let submit = self.submit
    slots.run(.submit, policy: .firstWins) { @MainActor [weak self] in
      await submit(text)
      self?.submissions += 1
    }
  }
}
// endregion: fixed-search-screen

// region: search-stream
/// The same rule as a stream: `switchToLatestFlow` is latest-wins for the search, as
/// `TaskSlots.run(.search)` is.
public func searchResults<Terms: AsyncSequence & Sendable>(
  for terms: Terms, search: @escaping Search
) -> some AsyncSequence<[String], Never> & Sendable where Terms.Element == String, Terms.Failure == Never {
  terms.switchToLatestFlow { term in Flow<[String], Never> { emitter in await emitter.emit(await search(term)) } }
}
// endregion: search-stream
