import AsyncFlow
import Synchronization

// region: feed-drops
/// Counts what every client of a feed lost, for the service's metrics.
public final class DropMeter: Sendable {
  private let count = Atomic(0)

  public init() {}

  public func record(_ dropped: Int) { count.add(dropped, ordering: .relaxed) }

  public var total: Int { count.load(ordering: .relaxed) }
}

/// One upstream shared by every connected client. Each client keeps the newest `limit` events it
/// has not been sent yet: a client that falls further behind loses the oldest, never slows the
/// others, and the loss is counted, per client and in total.
public final class LiveFeed: Sendable {
  public let events: AsyncShareFlowSequence<Int, Never>
  public let meter: DropMeter

  public init(upstream: some AsyncSequence<Int, Never> & Sendable, keepingPerClient limit: Int = 256) {
    let meter = DropMeter()
    self.meter = meter
    events = upstream.shareFlow(bufferingPolicy: .bufferingNewest(limit).onDrop { meter.record($0) })
  }
}

/// Sends the feed to one client until it ends; tells the client how many events it missed before
/// each event that follows a gap, and returns what it sent and what the client lost.
public func serve(
  _ feed: LiveFeed, to client: @Sendable (_ event: Int, _ missed: Int) async -> Void
) async -> (sent: Int, lost: Int) {
  var events = feed.events.makeAsyncIterator()
  var sent = 0
  var lostSoFar = 0
  while let event = await events.next() {
    let lost = events.droppedCount
    await client(event, lost - lostSoFar)
    lostSoFar = lost
    sent += 1
  }
  return (sent, events.droppedCount)
}
// endregion: feed-drops
