/// User values taken out of a state under its lock (an element dropped by a buffering policy, a
/// replay entry evicted), carried out in the action so that they are released after the lock: a
/// value's `deinit` may call back into the same source (send, cancel a subscription, read a count),
/// and under the lock that call would deadlock.
///
/// Up to two values are held inline, so that the usual cases allocate nothing: a `CurrentValueFlow`
/// replacing its value evicts it from the replay and drops it from its subscriber's buffer (with
/// only `.one` inline, the second went into a new array on every send: measured on
/// `W2.currentValue1`, 300 ns per send against 120–180).
@usableFromInline
struct ReleasedElements<Element> {
  @usableFromInline
  enum Storage {
    case none
    case one(Element)
    case two(Element, Element)
    case many([Element])
  }

  @usableFromInline var storage = Storage.none

  @inlinable init() {}

  @inlinable var isEmpty: Bool {
    if case .none = storage { return true }
    return false
  }

  @inlinable var count: Int {
    switch storage {
    case .none: 0
    case .one: 1
    case .two: 2
    case .many(let elements): elements.count
    }
  }

  @inlinable
  mutating func append(_ element: Element) {
    switch storage {
    case .none:
      storage = .one(element)
    case .one(let first):
      storage = .two(first, element)
    case .two(let first, let second):
      storage = .many([first, second, element])
    case .many(var elements):
      storage = .none  // `elements` is uniquely referenced: appending does not copy it
      elements.append(element)
      storage = .many(elements)
    }
  }
}

extension ReleasedElements: Sendable where Element: Sendable {}
extension ReleasedElements.Storage: Sendable where Element: Sendable {}
