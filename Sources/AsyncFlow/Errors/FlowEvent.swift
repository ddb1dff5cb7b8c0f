/// One event of a sequence as a value: an element, its finish or its failure. Made by
/// ``_Concurrency/AsyncSequence/materialize()``, turned back by
/// ``_Concurrency/AsyncSequence/dematerialize()``.
///
/// ```swift
/// for await event in uploads.materialize() {
///   switch event {
///   case .element(let progress): bar.progress = progress
///   case .finished: bar.isHidden = true
///   case .failed(let error): show(error)
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
