/// The one key of the flattening operators that do not group by identity.
@usableFromInline
struct FlattenSingleKey: Hashable, Sendable {
  @inlinable init() {}
}
