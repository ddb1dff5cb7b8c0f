/// A first-in first-out queue with O(1) `append` and `popFirst`: the one queue behind every
/// AsyncFlow buffer, replay and output list.
///
/// Why not an `Array`: `removeFirst()` moves every remaining element, so draining a backlog of `n`
/// costs O(n²) (measured on `bufferFlow(.unbounded)`: 1.7–1.9× the per-element cost at 80,000 over
/// 20,000). The storage grows by doubling and never shrinks while the queue lives; `removeAll()`
/// hands the elements out so that a storage can release them after its lock.
///
/// A value type with copy-on-write, as `Array` is: the elements live in one `ManagedBuffer`, only
/// the live ones initialized. Not a `ContiguousArray<Element?>`: its slots were twice the size of
/// an `Int`, and each growth wrote `nil` into the new half and into the old storage before freeing
/// it, three passes over memory where `Array` makes one (measured on `W2.passthrough4`, whose
/// subscribers' buffers grow to hundreds of thousands: 205–225 ns per delivery against 60–110).
/// An empty queue allocates nothing.
@usableFromInline
package struct RingBuffer<Element> {
  /// A pointer to a `RingBufferStorage`, not the class reference: its `isUniqueReference()` needs
  /// no metadata of the generic class (see `isUnique`).
  @usableFromInline var storage: ManagedBufferPointer<RingBufferHeader, Element>?

  @inlinable
  package init() { storage = nil }

  @inlinable
  package init(_ elements: some Sequence<Element>) {
    self.init()
    for element in elements { append(element) }
  }

  @inlinable
  package var count: Int { storage?.withUnsafeMutablePointerToHeader { $0.pointee.count } ?? 0 }

  @inlinable
  package var isEmpty: Bool { count == 0 }

  @inlinable
  package var first: Element? { count == 0 ? nil : self[0] }

  @inlinable
  package var last: Element? {
    get { count == 0 ? nil : self[count - 1] }
    set {
      precondition(count > 0 && newValue != nil, "RingBuffer.last: set only on a non-empty queue, to a value")
      self[count - 1] = newValue!
    }
  }

  /// The element `offset` places from the front.
  @inlinable
  package subscript(offset: Int) -> Element {
    get {
      precondition(offset >= 0 && offset < count, "RingBuffer: offset \(offset) out of 0..<\(count)")
      return storage.unsafelyUnwrapped.withUnsafeMutablePointers { header, elements in
        elements[header.pointee.physical(offset)]
      }
    }
    set {
      precondition(offset >= 0 && offset < count, "RingBuffer: offset \(offset) out of 0..<\(count)")
      makeUnique()
      storage.unsafelyUnwrapped.withUnsafeMutablePointers { header, elements in
        elements[header.pointee.physical(offset)] = newValue
      }
    }
  }

  @inlinable
  package mutating func append(_ element: Element) {
    if !isUnique || isFull { reallocate() }
    storage.unsafelyUnwrapped.withUnsafeMutablePointers { header, elements in
      (elements + header.pointee.physical(header.pointee.count)).initialize(to: element)
      header.pointee.count += 1
    }
  }

  @inlinable
  package mutating func popFirst() -> Element? {
    guard count > 0 else { return nil }
    makeUnique()
    return storage.unsafelyUnwrapped.withUnsafeMutablePointers { header, elements in
      let element = (elements + header.pointee.head).move()
      header.pointee.count -= 1
      header.pointee.head = header.pointee.count == 0 ? 0 : header.pointee.physical(1)
      return element
    }
  }

  /// Removes the first `k` elements and returns them, so that the caller can release them after
  /// its lock.
  @inlinable
  @discardableResult
  package mutating func removeFirst(_ k: Int) -> [Element] {
    precondition(k >= 0 && k <= count, "RingBuffer.removeFirst(_:): k must be in 0...\(count), got \(k)")
    guard k > 0 else { return [] }
    makeUnique()
    return storage.unsafelyUnwrapped.withUnsafeMutablePointers { header, elements in
      let head = header.pointee.head
      let leading = Swift.min(k, header.pointee.capacity - head)
      let removed = [Element](unsafeUninitializedCapacity: k) { target, initialized in
        target.baseAddress.unsafelyUnwrapped.moveInitialize(from: elements + head, count: leading)
        (target.baseAddress.unsafelyUnwrapped + leading).moveInitialize(from: elements, count: k - leading)
        initialized = k
      }
      header.pointee.count -= k
      header.pointee.head = header.pointee.count == 0 ? 0 : header.pointee.physical(k)
      return removed
    }
  }

  /// Empties the queue and returns its elements, oldest first.
  @inlinable
  package mutating func removeAll() -> [Element] { removeFirst(count) }

  /// How many elements fit before the storage grows (for tests: an append in place keeps it).
  var capacity: Int { storage?.withUnsafeMutablePointerToHeader { $0.pointee.capacity } ?? 0 }

  /// Where the elements live (for tests: a copy of the storage moves them).
  var storageAddress: UnsafeMutableRawPointer? {
    storage?.withUnsafeMutablePointerToElements { UnsafeMutableRawPointer($0) }
  }

  @inlinable
  var isFull: Bool {
    storage.unsafelyUnwrapped.withUnsafeMutablePointerToHeader { $0.pointee.count == $0.pointee.capacity }
  }

  @inlinable
  mutating func makeUnique() {
    if !isUnique { reallocate() }
  }

  /// Whether this queue is the only holder of its storage (`false` without one).
  ///
  /// Asked through the `ManagedBufferPointer`, not with `isKnownUniquelyReferenced` on a class
  /// reference: that generic function needs the metadata of the generic class
  /// `RingBufferStorage<Element>`, which code not specialized for the element type (a sink's drain)
  /// looked up on every `popFirst` (measured with perf on `W2.sink1`: 13 % of the time in
  /// `swift_getGenericMetadata`).
  @inlinable
  var isUnique: Bool {
    mutating get { storage?.isUniqueReference() ?? false }
  }

  /// Gives the queue a storage of its own with room for one more element: the elements are moved
  /// from a storage only this queue holds, copied from a shared one (copy on write), and the
  /// capacity doubles when the queue is full.
  ///
  /// Inlinable, so that it is specialized for the element type in the module that uses the queue:
  /// unspecialized, each element moved here went through its type's value witnesses and a metadata
  /// look-up, and a hot source whose subscribers fell behind spent two thirds of its time here
  /// (measured with perf on `W2.passthrough4`: 720 ns per delivery against 60–110 with an `Array`).
  /// The elements move in two block moves (`head..<capacity`, then the wrapped part). Out of line,
  /// so that `append` stays small where it is inlined.
  @inlinable
  @inline(never)
  mutating func reallocate() {
    // Asked before `old` below holds the storage too.
    let isUnique = self.isUnique
    let count = self.count
    let oldCapacity = storage?.withUnsafeMutablePointerToHeader { $0.pointee.capacity } ?? 0
    let newCapacity = count == oldCapacity ? Swift.max(4, oldCapacity * 2) : oldCapacity
    let grown = RingBufferStorage<Element>.make(capacity: newCapacity, count: count)
    guard let old = storage else {
      storage = grown
      return
    }
    old.withUnsafeMutablePointers { header, source in
      let head = header.pointee.head
      let leading = Swift.min(count, header.pointee.capacity - head)
      grown.withUnsafeMutablePointerToElements { target in
        if isUnique {
          target.moveInitialize(from: source + head, count: leading)
          (target + leading).moveInitialize(from: source, count: count - leading)
          header.pointee.count = 0  // moved out: the old storage deinitializes nothing
          header.pointee.head = 0
        } else {
          target.initialize(from: source + head, count: leading)
          (target + leading).initialize(from: source, count: count - leading)
        }
      }
    }
    storage = grown
  }
}

/// Where `count` elements sit in a storage of `capacity` slots, from slot `head`, wrapping around.
@usableFromInline
struct RingBufferHeader {
  @usableFromInline let capacity: Int
  @usableFromInline var head: Int
  @usableFromInline var count: Int

  @inlinable
  init(capacity: Int, head: Int, count: Int) {
    self.capacity = capacity
    self.head = head
    self.count = count
  }

  /// The slot of the element `offset` places from the front.
  @inlinable
  func physical(_ offset: Int) -> Int {
    let index = head + offset
    return index >= capacity ? index - capacity : index
  }
}

/// The slots of a ``RingBuffer``: only the `count` from `head` are initialized, and deinitialized
/// with it.
@usableFromInline
final class RingBufferStorage<Element>: ManagedBuffer<RingBufferHeader, Element> {
  /// A storage of `capacity` slots whose first `count` the caller initializes.
  @inlinable
  static func make(capacity: Int, count: Int) -> ManagedBufferPointer<RingBufferHeader, Element> {
    ManagedBufferPointer(bufferClass: RingBufferStorage.self, minimumCapacity: capacity) { _, _ in
      RingBufferHeader(capacity: capacity, head: 0, count: count)
    }
  }

  deinit {
    withUnsafeMutablePointers { header, elements in
      let head = header.pointee.head
      let count = header.pointee.count
      let leading = Swift.min(count, header.pointee.capacity - head)
      (elements + head).deinitialize(count: leading)
      elements.deinitialize(count: count - leading)
    }
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

// Sound: the storage is shared only by copies of a queue, and each copies it before it writes
// (copy on write), as `Array` does.
extension RingBuffer: @unchecked Sendable where Element: Sendable {}

extension RingBuffer: ExpressibleByArrayLiteral {
  @inlinable
  package init(arrayLiteral elements: Element...) { self.init(elements) }
}

/// Reflected as the collection of its elements, oldest first: the default mirror walks into the
/// `ManagedBufferPointer`'s `Builtin.NativeObject`, which has no field metadata, and the runtime
/// read past it (a crash in `swift_reflectionMirror_subscript` as soon as the queue held an
/// element: `dump` of a `RequestLog` with entries, or Swift Testing reflecting a failed `#expect`
/// on a model that holds one).
extension RingBuffer: CustomReflectable {
  @usableFromInline package var customMirror: Mirror {
    Mirror(self, unlabeledChildren: Array(self), displayStyle: .collection)
  }
}
