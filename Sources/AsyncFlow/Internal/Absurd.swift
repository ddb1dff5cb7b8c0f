/// Turns an impossible `Never` into any type, where a `Failure == Never` sequence must supply a
/// failure transform that can never run. A closure with a `Never` parameter draws a warning; this
/// function does not.
@usableFromInline
func absurd<T>(_ never: Never) -> T {}
