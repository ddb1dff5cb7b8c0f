import Testing

extension Trait where Self == TimeLimitTrait {
  /// Every suite's time limit: a guard that ends a hung test, never a speed check. Tests run in
  /// parallel, so a test's wall time follows the whole run's: 21-26 s on a quiet machine, 42-54 s
  /// beside five busy processes, 145 s beside eight on the run's core, where 18 tests of suites
  /// limited to one minute overran, and CI once took 165 s. Five minutes is above the whole run on
  /// all of them. (The other test targets keep the same limit under the same name.) A test that
  /// loops over rounds stops once the guard cancels it (`where !Task.isCancelled`): otherwise each
  /// round left records issues of its own after the guard's (362 in one run beside eight busy
  /// processes), and the real one is hard to find.
  static var hangGuard: Self { .timeLimit(.minutes(5)) }
}
