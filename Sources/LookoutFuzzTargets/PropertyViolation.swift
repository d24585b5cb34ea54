/// A property that a fuzz target checks did not hold: a bug, described by what was seen.
///
/// The libFuzzer entry point turns it into a crash, so libFuzzer keeps the input as a
/// reproducer; the corpus replay test records it as an issue.
public struct PropertyViolation: Error, Sendable, CustomStringConvertible {
    /// Which property failed, and on what.
    public let description: String

    init(_ description: String) {
        self.description = description
    }

    /// Throws `message` unless `condition` holds.
    static func require(_ condition: Bool, _ message: @autoclosure () -> String) throws(PropertyViolation) {
        guard condition else { throw PropertyViolation(message()) }
    }
}

/// At most `limit` characters of `text` for a message, so a megabyte input does not
/// make a megabyte report.
func excerpt(_ text: some StringProtocol, limit: Int = 160) -> String {
    text.count <= limit ? String(text) : String(text.prefix(limit)) + "… (\(text.utf8.count) bytes)"
}
