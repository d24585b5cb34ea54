/// Work to run later, kept as a value. A closure kept bare in a generic container (a
/// `Mutex`, an array) is wrapped in a reabstraction thunk, one more allocation each time;
/// in a struct it is kept as it is. The deadline timer's actions and the work a resume
/// batch posts to other loops are kept so.
public struct Action: Sendable {
    public let run: @Sendable () -> Void

    public init(_ run: @escaping @Sendable () -> Void) {
        self.run = run
    }
}
