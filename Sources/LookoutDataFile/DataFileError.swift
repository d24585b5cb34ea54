/// Why a data file cannot be used. The message names the entry at fault, such as
/// `users[2].role must be one of reader, editor, admin`, for the operator who wrote it.
public struct DataFileError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The message for the operator.
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
