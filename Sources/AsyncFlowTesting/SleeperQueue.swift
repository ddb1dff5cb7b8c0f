/// The sleepers of a ``TestClock``, earliest deadline first and, among equal deadlines, in
/// registration order (the order of their ids): a binary min-heap of (deadline, id), plus the live
/// sleepers by id.
///
/// Both registering and firing are O(log n): a `debounceFlow` under a fast input registers and
/// cancels a sleep per element, and a sorted array paid O(n) for each (its insertion and its
/// `removeFirst()`). A cancelled sleeper leaves the dictionary at once (so ``count`` is exact) and
/// its heap entry later: popping skips entries whose id is gone, and the heap is rebuilt from the
/// live sleepers when stale entries outnumber them, so it never holds more than about twice the
/// live count.
struct SleeperQueue<Sleeper> {
  private struct Entry {
    var deadline: TestClock.Instant
    var id: Int

    func precedes(_ other: Entry) -> Bool { deadline != other.deadline ? deadline < other.deadline : id < other.id }
  }

  private var heap: [Entry] = []
  private var live: [Int: (deadline: TestClock.Instant, sleeper: Sleeper)] = [:]

  /// The number of sleepers registered and neither fired nor removed.
  var count: Int { live.count }

  /// Registers `sleeper` under `id`; ids must grow with registration, so that they break ties.
  mutating func insert(_ sleeper: Sleeper, id: Int, deadline: TestClock.Instant) {
    live[id] = (deadline, sleeper)
    heap.append(Entry(deadline: deadline, id: id))
    siftUp(heap.count - 1)
  }

  /// Removes the sleeper `id` (a cancelled sleep); `nil` if it has fired or was never registered.
  mutating func remove(id: Int) -> Sleeper? {
    guard let removed = live.removeValue(forKey: id) else { return nil }
    if heap.count > 2 * live.count + 16 { rebuild() }
    return removed.sleeper
  }

  /// Removes and returns the earliest sleeper if its deadline is at or before `deadline` (any
  /// deadline, for `nil`).
  mutating func popFirst(dueBy deadline: TestClock.Instant?) -> (deadline: TestClock.Instant, sleeper: Sleeper)? {
    dropStale()
    guard let first = heap.first, deadline.map({ first.deadline <= $0 }) ?? true else { return nil }
    removeTop()
    return live.removeValue(forKey: first.id)
  }

  /// Every live sleeper, in firing order.
  var ordered: [(deadline: TestClock.Instant, sleeper: Sleeper)] {
    live.sorted { ($0.value.deadline, $0.key) < ($1.value.deadline, $1.key) }.map(\.value)
  }

  private mutating func dropStale() { while let first = heap.first, live[first.id] == nil { removeTop() } }

  private mutating func rebuild() {
    heap = live.map { Entry(deadline: $0.value.deadline, id: $0.key) }
    for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(index) }
  }

  private mutating func removeTop() {
    heap.swapAt(0, heap.count - 1)
    heap.removeLast()
    if !heap.isEmpty { siftDown(0) }
  }

  private mutating func siftUp(_ start: Int) {
    var child = start
    while child > 0, heap[child].precedes(heap[(child - 1) / 2]) {
      heap.swapAt(child, (child - 1) / 2)
      child = (child - 1) / 2
    }
  }

  private mutating func siftDown(_ start: Int) {
    var parent = start
    while true {
      var smallest = parent
      for child in [2 * parent + 1, 2 * parent + 2] where child < heap.count && heap[child].precedes(heap[smallest]) {
        smallest = child
      }
      guard smallest != parent else { return }
      heap.swapAt(parent, smallest)
      parent = smallest
    }
  }
}
