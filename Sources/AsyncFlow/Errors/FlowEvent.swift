/// One event of a sequence as a value: an element, its finish or its failure. Made by
/// ``_Concurrency/AsyncSequence/materialize()``, turned back by
/// ``_Concurrency/AsyncSequence/dematerialize()``.
///
/// ```swift
/// let uploads = Flow.sequence([0.5, 1]).setFailureType(to: APIError.self)  // an upload's progress
/// for await event in uploads.materialize() {
///   switch event {
///   case .element(let progress): print("uploaded \(progress * 100) %")
///   case .finished: print("done")
///   case .failed(let error): print("upload failed: \(error)")
///   }
/// }
/// ```
public enum FlowEvent<Element, Failure: Error> {
  /// An element of the sequence.
  case element(Element)
  /// The sequence finished.
  case finished
  /// The sequence failed.
  case failed(Failure)
}

extension FlowEvent: Sendable where Element: Sendable {}
extension FlowEvent: Equatable where Element: Equatable, Failure: Equatable {}
extension FlowEvent: Hashable where Element: Hashable, Failure: Hashable {}
