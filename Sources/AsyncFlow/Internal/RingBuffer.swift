/// A first-in first-out queue with O(1) `append` and `popFirst`: the one queue behind every
/// AsyncFlow buffer, replay and output list.
///
/// Why not an `Array`: `removeFirst()` moves every remaining element, so draining a backlog of `n`
/// costs O(n²) (measured on `bufferFlow(.unbounded)`: 1.7–1.9× the per-element cost at 80,000 over
/// 20,000). The storage grows by doubling and never shrinks while the queue lives; `removeAll()`
/// hands the elements out so that a storage can release them after its lock.
@usableFromInline
package struct RingBuffer<Element> {
  @usableFromInline var slots: ContiguousArray<Element?>
  /// Index in `slots` of the first element.
  @usableFromInline var head: Int
  @usableFromInline package private(set) var count: Int

  @inlinable
  package init() {
    slots = []
    head = 0
    count = 0
  }

  @inlinable
  package init(_ elements: some Sequence<Element>) {
    self.init()
    for element in elements { append(element) }
  }

  @inlinable
  package var isEmpty: Bool { count == 0 }

  @inlinable
  package var first: Element? { count == 0 ? nil : slots[head] }

  @inlinable
  package var last: Element? {
    get { count == 0 ? nil : slots[physical(count - 1)] }
    set {
      precondition(count > 0 && newValue != nil, "RingBuffer.last: set only on a non-empty queue, to a value")
      slots[physical(count - 1)] = newValue
    }
  }

  /// The element `offset` places from the front.
  @inlinable
  package subscript(offset: Int) -> Element {
    get {
      precondition(offset >= 0 && offset < count, "RingBuffer: offset \(offset) out of 0..<\(count)")
      return slots[physical(offset)]!
    }
    set {
      precondition(offset >= 0 && offset < count, "RingBuffer: offset \(offset) out of 0..<\(count)")
      slots[physical(offset)] = newValue
    }
  }

  @inlinable
  func physical(_ offset: Int) -> Int {
    let index = head + offset
    return index >= slots.count ? index - slots.count : index
  }

  @inlinable
  package mutating func append(_ element: Element) {
    if count == slots.count { grow() }
    slots[physical(count)] = element
    count += 1
  }

  @inlinable
  package mutating func popFirst() -> Element? {
    guard count > 0 else { return nil }
    let element = slots[head].take()
    head += 1
    if head == slots.count { head = 0 }
    count -= 1
    return element
  }

  /// Removes the first `k` elements and returns them, so that the caller can release them after
  /// its lock.
  @inlinable
  @discardableResult
  package mutating func removeFirst(_ k: Int) -> [Element] {
    precondition(k >= 0 && k <= count, "RingBuffer.removeFirst(_:): k must be in 0...\(count), got \(k)")
    var removed: [Element] = []
    removed.reserveCapacity(k)
    for _ in 0..<k { removed.append(popFirst()!) }
    return removed
  }

  /// Empties the queue and returns its elements, oldest first.
  @inlinable
  package mutating func removeAll() -> [Element] {
    var removed: [Element] = []
    removed.reserveCapacity(count)
    while let element = popFirst() { removed.append(element) }
    head = 0
    return removed
  }

  @usableFromInline
  mutating func grow() {
    let newCapacity = Swift.max(4, slots.count * 2)
    var grown = ContiguousArray<Element?>()
    grown.reserveCapacity(newCapacity)
    for offset in 0..<count { grown.append(slots[physical(offset)].take()) }
    grown.append(contentsOf: repeatElement(nil, count: newCapacity - count))
    slots = grown
    head = 0
  }
}

extension RingBuffer: Sequence {
  @usableFromInline
  package struct Iterator: IteratorProtocol {
    @usableFromInline let buffer: RingBuffer
    @usableFromInline var offset = 0

    @inlinable
    init(buffer: RingBuffer) { self.buffer = buffer }

    @inlinable
    package mutating func next() -> Element? {
      guard offset < buffer.count else { return nil }
      defer { offset += 1 }
      return buffer[offset]
    }
  }

  @inlinable
  package func makeIterator() -> Iterator { Iterator(buffer: self) }

  @inlinable
  package var underestimatedCount: Int { count }
}

extension RingBuffer: Sendable where Element: Sendable {}

extension RingBuffer: ExpressibleByArrayLiteral {
  @inlinable
  package init(arrayLiteral elements: Element...) { self.init(elements) }
}
