/// The keys of a ``KeyedShareFlow``: for each key with a live share, that share, its generation, how
/// many of its iterators are alive, and whether its upstream runs. A key's entry goes when nothing
/// can use it any more: its upstream ended by itself, or no iterator of it is alive and its
/// upstream does not run (it stopped, after the grace period if there is one, or never started).
/// Until then every subscriber of the key gets the same share, so a key never has two upstreams.
struct KeyedShareStateMachine<Key: Hashable, Share> {
  struct Entry {
    enum Upstream { case idle, running }

    var share: Share
    let generation: Int
    var iterators = 0
    var upstream = Upstream.idle
  }

  private(set) var entries: [Key: Entry] = [:]
  private var nextGeneration = 0

  /// An iterator of `key` is made: the key's live share, or a new one `makeShare` makes (it runs
  /// no user code: the upstream is made when the share starts it).
  mutating func subscribe(_ key: Key, makeShare: (_ generation: Int) -> Share) -> (share: Share, generation: Int) {
    if entries[key] == nil {
      entries[key] = Entry(share: makeShare(nextGeneration), generation: nextGeneration)
      nextGeneration += 1
    }
    entries[key]!.iterators += 1
    return (entries[key]!.share, entries[key]!.generation)
  }

  /// An iterator of generation `generation` was released. Returns the share if its entry goes (to
  /// be released after the lock: it holds the replay's elements).
  mutating func iteratorReleased(_ key: Key, generation: Int) -> Share? {
    guard entries[key]?.generation == generation else { return nil }
    entries[key]!.iterators -= 1
    return removeIfUnused(key)
  }

  mutating func upstreamStarted(_ key: Key, generation: Int) {
    guard entries[key]?.generation == generation else { return }
    entries[key]!.upstream = .running
  }

  /// The upstream of generation `generation` ended: by itself (`stopped == false`: it finished or
  /// failed, and the key's next subscriber starts a new one) or because the share stopped it.
  mutating func upstreamEnded(_ key: Key, generation: Int, stopped: Bool) -> Share? {
    guard entries[key]?.generation == generation else { return nil }
    guard stopped else { return entries.removeValue(forKey: key)?.share }
    entries[key]!.upstream = .idle
    return removeIfUnused(key)
  }

  private mutating func removeIfUnused(_ key: Key) -> Share? {
    guard let entry = entries[key], entry.iterators == 0, entry.upstream == .idle else { return nil }
    return entries.removeValue(forKey: key)?.share
  }
}
