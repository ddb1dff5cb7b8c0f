import AsyncFlow

// What the corpus's pipelines take for granted: a small app's types. Compiled once per run into a
// module of its own (TypeCheckSupport), so that each pipeline's file holds only the pipeline and
// the time and solver scopes measured are its own. Not part of any package target.

public struct Article: Sendable, Equatable {
  public var id: Int
  public var title: String
  public init(id: Int, title: String) {
    self.id = id
    self.title = title
  }
}

public enum SearchError: Error, Equatable { case offline }
public enum APIError: Error, Equatable { case down }

/// A stand-in for a real client, in the shapes apps write them.
public struct SearchClient: Sendable {
  public var fetch: @Sendable (String) async throws -> [Article]
  public init(fetch: @escaping @Sendable (String) async throws -> [Article]) { self.fetch = fetch }

  public func search(_ query: String) async throws -> [Article] { try await fetch(query) }
  public func results(_ query: String) -> Flow<[Article], SearchError> { Flow.fail(.offline) }
  public func page(_ number: Int) -> Flow<[Article], APIError> { Flow.fail(.down) }
  public func article(_ id: Int) -> Flow<Article?, Never> { Flow.just(nil) }
  public func save(_ article: Article) -> Flow<Article, APIError> { Flow.fail(.down) }
}

/// What the pipelines do to whole arrays, written out of line: the corpus renames every `.map`,
/// `.filter` and `.compactMap` of a pipeline for its baseline, and these are the standard library's.
public func withTitles(_ articles: [Article]) -> [Article] { articles.filter { !$0.title.isEmpty } }
public func titles(_ articles: [Article]) -> [String] { articles.map(\.title) }
public func placeholders(_ count: Int) -> [Article] { (0..<count).map { Article(id: $0, title: "") } }
