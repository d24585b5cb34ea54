/// The keys a render read, and the highest revision among them: the render's cursor.
///
/// Recorded explicitly (passed `inout` to the snapshot's read calls) rather than through
/// a task-local: renders are synchronous, and an explicit set costs an append per read.
public struct ReadSet: Sendable {
    public private(set) var keys: [StoreKey] = []
    /// The highest revision of anything read; 0 when nothing was read.
    public private(set) var revision: UInt64 = 0

    public init() {}

    mutating func record(_ key: StoreKey, revision: UInt64) {
        keys.append(key)
        if revision > self.revision { self.revision = revision }
    }
}
