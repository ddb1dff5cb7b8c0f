import Testing

extension Trait where Self == TimeLimitTrait {
  /// Every suite's time limit: a guard that ends a hung test, never a speed check. Why five
  /// minutes: Tests/AsyncFlowTests/Support/HangGuard.swift.
  static var hangGuard: Self { .timeLimit(.minutes(5)) }
}
