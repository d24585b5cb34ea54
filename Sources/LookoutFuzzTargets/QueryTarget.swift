import LookoutFeeds
import LookoutHTTP
import LookoutJSON
import LookoutStore

/// Query strings, and list and document reads over ``FixtureStore``.
///
/// - Decoding: a query re-encoded from its decoded pairs decodes to the same pairs (and
///   so does a path segment), and leaving parameters out (as cache keys and `Link`
///   targets do) leaves exactly them out.
/// - Every query on every collection either parses and evaluates or throws
///   ``QueryError``; with a token (every field visible) it never asks for one.
/// - Without a token a read returns, expands, and records for its long-poll only public
///   fields, and a query it accepts is accepted with a token too, with the same
///   documents unless `q` searches fields it could not see.
/// - Pages are consistent: no more documents than the page or limit, no id twice, a
///   `next` cursor only after a full page, and that cursor decodes to itself.
enum QueryTarget {
    static func check(_ input: [UInt8]) throws(PropertyViolation) {
        let text = String(decoding: input, as: UTF8.self)
        let query = QueryParameters(text[...])
        try checkDecoding(query)
        for collection in FixtureStore.collections {
            try checkList(query, of: collection)
            try checkDocument(query, of: collection)
        }
    }

    private static func checkDecoding(_ query: QueryParameters) throws(PropertyViolation) {
        try PropertyViolation.require(query.pairs.count == query.items.count, "pairs and items differ in number")
        let reencoded = query.pairs.map { percentEncoded($0.name) + "=" + percentEncoded($0.value) }
        let again = QueryParameters(reencoded.joined(separator: "&")[...])
        try PropertyViolation.require(
            sameBytes(again.pairs, query.pairs), "the decoded pairs, encoded again, decode to other pairs")
        for (name, _) in query.pairs {
            // As the router decodes a path segment: `+` stays a plus.
            try PropertyViolation.require(
                QueryParameters.decode(percentEncoded(name)[...], plusIsSpace: false).utf8.elementsEqual(name.utf8),
                "\(excerpt(name)), encoded, decodes as a path segment to other text")
        }
        try PropertyViolation.require(
            query.encoded(excluding: []) == query.items.joined(separator: "&"),
            "encoded(excluding: []) is not the query as sent")
        for excluded in [ListQuery.linkOmitted, Set(query.pairs.prefix(1).map(\.name))] {
            let kept = QueryParameters(query.encoded(excluding: excluded)[...])
            try PropertyViolation.require(
                sameBytes(kept.pairs, query.pairs.filter { !excluded.contains($0.name) }),
                "encoded(excluding: \(excerpt(excluded.sorted().description))) does not keep exactly the others")
        }
    }

    private static func checkList(_ query: QueryParameters, of collection: String) throws(PropertyViolation) {
        let snapshot = FixtureStore.snapshot
        var ids: [ReadScope: [Int]] = [:]
        for scope in [ReadScope.publicFields, .everything] {
            let parsed: ListQuery?
            do {
                parsed = try ListQuery(collection: collection, parameters: query.pairs, in: snapshot, scope: scope)
            } catch {
                try PropertyViolation.require(
                    scope == .publicFields || !error.needsToken,
                    "with every field visible, \(collection) asks for a token: \(error)")
                try PropertyViolation.require(
                    ids[.publicFields] == nil,
                    "\(collection): a query accepted without a token is refused with one: \(error)")
                continue
            }
            guard let list = parsed else { throw PropertyViolation("\(collection) is not found") }
            var reads = ReadSet()
            let result = list.evaluate(in: snapshot, reads: &reads)
            let returned = try checkPage(result, of: list, in: collection)
            if scope == .publicFields {
                for document in result.documents {
                    try checkPublic(document, of: collection, expanding: list.projection)
                }
                try checkPublic(reads, of: collection)
            }
            ids[scope] = returned
        }
        if let anonymous = ids[.publicFields], let everything = ids[.everything], query["q"] == nil {
            try PropertyViolation.require(
                anonymous == everything,
                "\(collection): without a token the list is \(anonymous), with one \(everything)")
        }
    }

    /// The ids a page returns, after checking it against its paging.
    private static func checkPage(_ result: ListResult, of list: ListQuery, in collection: String)
        throws(PropertyViolation) -> [Int]
    {
        let ids = result.documents.compactMap { $0["id"]?.intValue }
        try PropertyViolation.require(ids.count == result.documents.count, "\(collection): a document without id")
        try PropertyViolation.require(Set(ids).count == ids.count, "\(collection): a document twice in \(ids)")
        try PropertyViolation.require(
            ids.count <= result.total, "\(collection): \(ids.count) documents of a total of \(result.total)")
        switch result.window {
        case .all:
            try PropertyViolation.require(ids.count == result.total, "\(collection): an unpaged list is cut short")
        case .page(let page, let lastPage):
            try PropertyViolation.require(
                ids.count == page.range.count && ids.count <= page.size && lastPage >= 1,
                "\(collection): page \(page) holds \(ids.count) documents")
        case .cursor(let next, let limit):
            try PropertyViolation.require(
                ids.count <= limit, "\(collection): \(ids.count) documents past limit \(limit)")
            if let next {
                try PropertyViolation.require(ids.count == limit, "\(collection): a next cursor after a short page")
                let decoded = try? ListCursor(decoding: next.encoded, for: list.sort)
                try PropertyViolation.require(decoded == next, "\(collection): a next cursor does not decode to itself")
            }
        }
        return ids
    }

    /// A document read without a token holds public fields, `id`, and expanded
    /// references whose documents hold their own collection's public fields.
    private static func checkPublic(_ document: JSONObject, of collection: String, expanding projection: Projection)
        throws(PropertyViolation)
    {
        let snapshot = FixtureStore.snapshot
        guard let options = snapshot.options(of: collection) else { return }
        let expanded = projection.expand.map { $0.hasSuffix("_id") ? String($0.dropLast(3)) : $0 + "_expanded" }
        for member in document {
            if let index = expanded.firstIndex(of: member.key) {
                guard case .object(let referenced) = member.value,
                    let target = options.references[projection.expand[index]],
                    let targetOptions = snapshot.options(of: target)
                else { continue }
                for field in referenced.keys where !targetOptions.publicFields.contains(field) {
                    throw PropertyViolation("\(collection): expanding shows \(target)'s private field \(field)")
                }
                continue
            }
            try PropertyViolation.require(
                options.publicFields.contains(member.key),
                "\(collection): read without a token shows the private field \(excerpt(member.key))")
        }
    }

    /// A read without a token waits on public fields only: on no private field, and on
    /// no set of field names of a collection that is only partly public.
    private static func checkPublic(_ reads: ReadSet, of collection: String) throws(PropertyViolation) {
        let snapshot = FixtureStore.snapshot
        for key in reads.keys {
            switch key {
            case .field(let name, _, let field):
                try PropertyViolation.require(
                    snapshot.options(of: name)?.publicFields.contains(field) == true,
                    "\(collection): read without a token waits on the private field \(name).\(excerpt(field))")
            case .fieldNames(let name, _):
                try PropertyViolation.require(
                    snapshot.options(of: name)?.publicFields == .all,
                    "\(collection): read without a token waits on the field names of \(name)")
            case .membership:
                break
            }
        }
    }

    /// `GET /v1/{collection}/1` with this query's `fields` and `expand`.
    private static func checkDocument(_ query: QueryParameters, of collection: String) throws(PropertyViolation) {
        let snapshot = FixtureStore.snapshot
        guard let options = snapshot.options(of: collection) else { return }
        for scope in [ReadScope.publicFields, .everything] {
            let projection: Projection
            do {
                projection = try Projection(
                    fields: query["fields"], expand: query["expand"], collection: collection, options: options,
                    scope: scope, in: snapshot)
            } catch {
                try PropertyViolation.require(
                    scope == .publicFields || !error.needsToken,
                    "with every field visible, reading \(collection)/1 asks for a token: \(error)")
                continue
            }
            var reads = ReadSet()
            guard let document = projection.read(1, in: collection, from: snapshot, reads: &reads) else {
                throw PropertyViolation("\(collection)/1 is not found")
            }
            try PropertyViolation.require(document["id"] == .int(1), "\(collection)/1 is read without its id")
            if scope == .publicFields {
                try checkPublic(document, of: collection, expanding: projection)
                try checkPublic(reads, of: collection)
            }
        }
    }

    /// `text` with every byte but the unreserved ones (RFC 3986 §2.3) percent-encoded.
    static func percentEncoded(_ text: String) -> String {
        PercentEncoding.encode(text, keeping: PercentEncoding.isUnreserved)
    }

    /// Whether two lists of pairs hold the same bytes (String's == would equate
    /// canonically equivalent text).
    private static func sameBytes(_ a: [(name: String, value: String)], _ b: [(name: String, value: String)]) -> Bool {
        a.count == b.count
            && zip(a, b).allSatisfy {
                $0.name.utf8.elementsEqual($1.name.utf8) && $0.value.utf8.elementsEqual($1.value.utf8)
            }
    }
}
