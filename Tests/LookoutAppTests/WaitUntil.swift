import Testing

/// Asks `condition` every `step` until it holds, for up to 60 s of the clock, and records
/// `failure` as an issue if it never does. A bound stated as rounds of sleeps says little
/// about time on a loaded machine, and 60 s leaves room there.
func waitUntil(
    every step: Duration = .milliseconds(50),
    failure: @autoclosure () -> String = "the condition did not hold within 60 s",
    _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + .seconds(60)
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: step)
    }
    Issue.record(Comment(rawValue: failure()))
}
