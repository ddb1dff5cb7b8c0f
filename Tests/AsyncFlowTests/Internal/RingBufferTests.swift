import Testing

@testable import AsyncFlow

@Suite("RingBuffer", .hangGuard)
struct RingBufferTests {
  @Test func popsInTheOrderAppended_acrossGrowthAndWrapAround() {
    var queue = RingBuffer<Int>()
    var expected: [Int] = []
    var next = 0
    // Interleave appends and pops so the head wraps around the storage while it grows.
    for round in 0..<200 {
      for _ in 0..<(round % 7 + 1) {
        queue.append(next)
        expected.append(next)
        next += 1
      }
      for _ in 0..<(round % 5) {
        #expect(queue.popFirst() == (expected.isEmpty ? nil : expected.removeFirst()))
      }
      #expect(queue.count == expected.count)
      #expect(Array(queue) == expected)
      #expect(queue.first == expected.first)
      #expect(queue.last == expected.last)
    }
  }

  @Test func removeFirstAndRemoveAll_returnWhatTheyRemove() {
    var queue: RingBuffer = [1, 2, 3, 4, 5]
    #expect(queue.removeFirst(2) == [1, 2])
    queue.append(6)
    #expect(queue[0] == 3 && queue[3] == 6)
    queue.last = 7
    #expect(queue.removeAll() == [3, 4, 5, 7])
    #expect(queue.isEmpty && queue.popFirst() == nil && queue.first == nil)
  }

  @Test func popFirst_releasesTheElement() {
    final class Box {}
    weak var released: Box?
    var queue = RingBuffer<Box>()
    do {
      let box = Box()
      released = box
      queue.append(box)
    }
    _ = queue.popFirst()
    #expect(released == nil)
  }
}
