/// Page-number paging: which slice of a list page `number` shows.
///
/// Pages start at 1. A page past the end is empty and has no next page, so a client
/// that follows `hasNextPage` never sees an empty page that claims more.
public struct PageWindow: Sendable, Equatable {
    public let number: Int
    public let size: Int
    /// Index range of the page's items within the whole list (empty past the end).
    public let range: Range<Int>
    public let hasNextPage: Bool

    /// - Precondition: `number >= 1` and `size >= 1`.
    public init(number: Int, size: Int, total: Int) {
        precondition(number >= 1 && size >= 1, "pages start at 1 and hold at least one item")
        self.number = number
        self.size = size
        // Multiplication guarded: a huge page number is simply past the end.
        let (start, overflow) = (number - 1).multipliedReportingOverflow(by: size)
        let lower = overflow ? total : min(start, total)
        let upper = min(lower + size, total)
        self.range = lower..<upper
        self.hasNextPage = upper < total
    }
}
