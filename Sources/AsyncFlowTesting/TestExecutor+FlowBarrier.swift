import AsyncFlow

/// AsyncFlow's counting waits (a subject's or a share's `subscribers(count:)`) reach the clock's
/// barrier through this: on a test clock they give up when the clock is idle, as
/// ``TestClock/sleepers(count:fileID:filePath:line:column:)`` and the stubs' barriers do.
extension TestExecutor: FlowBarrierExecutor {}
