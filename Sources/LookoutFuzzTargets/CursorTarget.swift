import LookoutFeeds
import LookoutJSON
import LookoutStore

/// List cursors (`?after=`), under several sorts of ``FixtureStore``'s `shops`.
///
/// - A cursor that decodes re-encodes to a cursor that decodes to the same value, and
///   to the same text again.
/// - Following `next` links from any accepted cursor, two at a time, visits exactly the
///   documents that sort after it, in order, each once.
enum CursorTarget {
    /// `sort=` values, nil for the collection's declared sort.
    static let sorts: [String?] = [nil, "name", "-rating,name", "address.city,-id", "open,tags"]

    static func check(_ input: [UInt8]) throws(PropertyViolation) {
        let text = String(decoding: input, as: UTF8.self)
        for sort in sorts {
            try check(text, sort: sort)
        }
    }

    private static func check(_ text: String, sort: String?) throws(PropertyViolation) {
        let snapshot = FixtureStore.snapshot
        var parameters = [(name: "after", value: text), (name: "limit", value: "2")]
        if let sort { parameters.append((name: "sort", value: sort)) }
        let parsed: ListQuery?
        do {
            parsed = try ListQuery(collection: "shops", parameters: parameters, in: snapshot)
        } catch {
            try PropertyViolation.require(error.parameter == "after", "the fixture's query is refused: \(error)")
            return
        }
        guard let list = parsed else { throw PropertyViolation("the fixture has no shops") }
        guard case .cursor(let after?, _) = list.paging else {
            throw PropertyViolation("an accepted after= gives no cursor")
        }
        let again: ListCursor
        do {
            again = try ListCursor(decoding: after.encoded, for: list.sort)
        } catch {
            throw PropertyViolation("cursor \(excerpt(text)) re-encoded as \(after.encoded) is refused: \(error)")
        }
        try PropertyViolation.require(again == after, "cursor \(excerpt(text)) re-encodes to another cursor")
        try PropertyViolation.require(again.encoded == after.encoded, "a re-encoded cursor encodes to other text")

        var reads = ReadSet()
        let all = snapshot.ids(in: "shops", reads: &reads) ?? []
        let rows = snapshot.sortedRows(all, in: "shops", by: list.sort, reads: &reads)
        let expected = rows.filter {
            SortKey.compare($0, (after.values, after.id), by: list.sort) == .orderedDescending
        }.map(\.id)
        let visited = try walk(from: list, in: snapshot)
        try PropertyViolation.require(
            visited == expected,
            "after cursor \(excerpt(text)) (sort \(sort ?? "declared")) the pages give \(visited), not \(expected)")
    }

    /// The ids of the pages from `list` on, following each page's `next` cursor.
    private static func walk(from list: ListQuery, in snapshot: StoreSnapshot) throws(PropertyViolation) -> [Int] {
        var visited: [Int] = []
        var page = list
        // Six documents, two a page: far fewer pages than this.
        for _ in 0..<16 {
            var reads = ReadSet()
            let result = page.evaluate(in: snapshot, reads: &reads)
            visited += result.documents.compactMap { $0["id"]?.intValue }
            guard case .cursor(let next?, _) = result.window else { return visited }
            var parameters = [(name: "after", value: next.encoded), (name: "limit", value: "2")]
            if !list.sort.isEmpty {
                parameters.append((name: "sort", value: list.sort.map(\.description).joined(separator: ",")))
            }
            let following: ListQuery?
            do {
                following = try ListQuery(collection: "shops", parameters: parameters, in: snapshot)
            } catch {
                throw PropertyViolation("a next cursor is refused: \(error)")
            }
            guard let following else { throw PropertyViolation("the fixture has no shops") }
            page = following
        }
        throw PropertyViolation("following next cursors does not end: \(visited)")
    }
}
