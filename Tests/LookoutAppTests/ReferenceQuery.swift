import LookoutJSON

/// A reference for the list parameters of README "Any collection: filter, search, sort,
/// page", written from the README's text alone, to compare the server against.
///
/// Plain on purpose: every step is a linear scan or a straightforward comparison, in the
/// order the README describes it. Where the README leaves something open, the reading
/// chosen here is marked `Reading:`; the random comparison keeps away from those cases.
///
/// Cursors are opaque: the caller says which document a cursor names (`after:`), and the
/// answer predicts the page and whether a `next` link exists, not the cursor's text.
struct ReferenceQuery {
    /// One collection as the data file declares it.
    struct Collection {
        var name: String
        /// The declared `sort`, `-` marking a descending key.
        var sort: [String]
        var pageSize: Int
        var documents: [JSONObject]
    }

    /// What the server should answer to a `GET /v1/{collection}?…`.
    enum Answer: Equatable {
        case list(List)
        /// 400 `invalid_parameter`, the message naming `parameter`.
        case invalid(parameter: String)
    }

    /// A 200 list answer.
    struct List: Equatable {
        /// The page, projected by `fields`.
        var documents: [JSONValue]
        /// `X-Total-Count`: every document the filters and `q` match.
        var totalCount: Int
        var paging: Paging
    }

    enum Paging: Equatable {
        /// Neither `page` nor `limit`/`after`: every match at once.
        case none
        /// Page-number paging, with the exact `Link` header.
        case pages(link: String)
        /// Cursor paging: whether `rel="next"` is there, and its text up to the cursor.
        case cursor(hasNext: Bool, nextPrefix: String)
    }

    /// A key to sort on: a (possibly dotted) field name and its direction.
    struct SortKey: Equatable {
        var path: String
        var descending: Bool
    }

    enum Operator: String, CaseIterable {
        case notEqual = "_ne"
        case greaterOrEqual = "_gte"
        case greater = "_gt"
        case lessOrEqual = "_lte"
        case less = "_lt"
        case like = "_like"
        case equal = ""
    }

    /// One filter parameter, resolved to a field and an operator.
    struct Filter {
        var parameter: String
        var path: String
        var op: Operator
        var value: String
    }

    /// One `name=value` of a query string: decoded, and the raw text as sent.
    struct Parameter {
        var name: String
        var value: String
        var raw: String
    }

    static let reservedNames: Set<String> = [
        "q", "sort", "order", "page", "per_page", "limit", "after", "fields", "expand", "wait", "since",
    ]
    static let droppedFromLinks: Set<String> = ["page", "per_page", "limit", "after", "wait", "since"]

    /// A kept parameter as a `Link` target carries it (README): every byte but letters,
    /// digits, `-._~%!$&'()*+=:@/?` percent-encoded, so `,` `>` `"` and spaces cannot end
    /// a link.
    static func linkSafe(_ raw: String) -> String {
        let kept = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~%!$&'()*+=:@/?".utf8)
        return raw.utf8.map { kept.contains($0) ? String(UnicodeScalar($0)) : String(format: "%%%02X", $0) }.joined()
    }

    /// A parameter the README refuses: 400 `invalid_parameter`, naming it.
    struct InvalidParameter: Error {
        var name: String
    }

    var collection: Collection

    // MARK: - The answer

    /// The answer to `target` (`/v1/{name}?…`, percent-encoded as sent).
    /// - Parameter cursorDocument: the document the request's `after` cursor names, as it
    ///   was when the cursor was made; required when the target has `after`.
    func answer(target: String, after cursorDocument: JSONObject? = nil) -> Answer {
        do {
            return .list(try list(target: target, after: cursorDocument))
        } catch {
            return .invalid(parameter: error.name)
        }
    }

    private func list(target: String, after cursorDocument: JSONObject?) throws(InvalidParameter) -> List {
        let (path, parameters) = Self.split(target)
        var reserved: [String: String] = [:]
        var filters: [Filter] = []
        var keptInLinks: [String] = []
        for parameter in parameters {
            if Self.reservedNames.contains(parameter.name) {
                // A reserved parameter given twice counts once, the first time.
                if reserved[parameter.name] == nil { reserved[parameter.name] = parameter.value }
            } else {
                filters.append(try filter(parameter))
            }
            if !Self.droppedFromLinks.contains(parameter.name) { keptInLinks.append(Self.linkSafe(parameter.raw)) }
        }
        let sortKeys = try sortKeys(sort: reserved["sort"], order: reserved["order"])

        // Paging parameters: integers in range; page-number and cursor paging exclude each other.
        var page: Int?
        if let text = reserved["page"] {
            if reserved["limit"] != nil || reserved["after"] != nil { throw InvalidParameter(name: "page") }
            page = try Self.integer(text, in: 1...Int.max, parameter: "page")
        }
        let perPage = try reserved["per_page"].map { text throws(InvalidParameter) in
            try Self.integer(text, in: 1...1000, parameter: "per_page")
        }
        let limit = try reserved["limit"].map { text throws(InvalidParameter) in
            try Self.integer(text, in: 1...1000, parameter: "limit")
        }

        // `fields` may name fields no document has: they are left out.
        var fields: [String]?
        if let text = reserved["fields"] {
            fields = text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        }

        var matches = collection.documents.filter { document in
            Self.matchesAll(filters, document) && (reserved["q"].map { Self.matchesText($0, document) } ?? true)
        }
        matches.sort { Self.precedes($0, $1, by: sortKeys) }

        func link(_ appended: String, _ relation: String) -> String {
            "<\(path)?\((keptInLinks + [appended]).joined(separator: "&"))>; rel=\"\(relation)\""
        }

        var selected = matches
        var paging = Paging.none
        if let page {
            let size = perPage ?? collection.pageSize
            let start = min((page - 1) * size, matches.count)
            selected = Array(matches[start..<min(start + size, matches.count)])
            let last = max(1, (matches.count + size - 1) / size)
            var links = [link("page=1&per_page=\(size)", "first")]
            if page > 1 { links.append(link("page=\(min(page - 1, last))&per_page=\(size)", "prev")) }
            if page * size < matches.count { links.append(link("page=\(page + 1)&per_page=\(size)", "next")) }
            links.append(link("page=\(last)&per_page=\(size)", "last"))
            paging = .pages(link: links.joined(separator: ", "))
        } else if limit != nil || reserved["after"] != nil {
            let size = limit ?? collection.pageSize
            var following = matches
            if reserved["after"] != nil {
                guard let cursorDocument else { preconditionFailure("a target with `after` needs its document") }
                following = matches.filter { Self.precedes(cursorDocument, $0, by: sortKeys) }
            }
            selected = Array(following.prefix(size))
            let prefix = String(link("limit=\(size)&after=", "next").prefix { $0 != ">" })
            paging = .cursor(hasNext: following.count > size, nextPrefix: prefix)
        }

        let documents = selected.map { document -> JSONValue in
            guard let fields else { return .object(document) }
            let kept = document.members.filter { $0.key == "id" || fields.contains($0.key) }
            return .object(JSONObject(kept.map { ($0.key, $0.value) }))
        }
        return List(documents: documents, totalCount: matches.count, paging: paging)
    }

    /// Every document the filters, `q` and sort of `target` select, in order, unpaged.
    func orderedMatches(target: String) -> [JSONObject] {
        let (path, parameters) = Self.split(target)
        let kept = parameters.filter { !["page", "per_page", "limit", "after", "fields"].contains($0.name) }
        guard case .list(let list) = answer(target: path + "?" + kept.map(\.raw).joined(separator: "&")) else {
            return []
        }
        return list.documents.map { document in collection.documents.first { $0["id"] == document["id"] }! }
    }

    // MARK: - Parameters

    /// An integer written as digits (with an optional `-`) and in `range`.
    static func integer(_ text: String, in range: ClosedRange<Int>, parameter: String) throws(InvalidParameter) -> Int {
        let digits = text.hasPrefix("-") ? text.dropFirst() : Substring(text)
        guard !digits.isEmpty, digits.allSatisfy(\.isASCIIDigit), let value = Int(text), range.contains(value) else {
            throw InvalidParameter(name: parameter)
        }
        return value
    }

    /// A field name must be `id` or one that some document has at the top level; of a
    /// dotted name only the first part is checked.
    func isKnownField(_ path: String) -> Bool {
        let top = String(path.prefix { $0 != "." })
        return top == "id" || collection.documents.contains { $0[top] != nil }
    }

    /// The filter a non-reserved parameter names.
    func filter(_ parameter: Parameter) throws(InvalidParameter) -> Filter {
        // A dotted name: a known operator suffix is an operator, anything else is the path.
        if parameter.name.contains("."), isKnownField(parameter.name) {
            for op in Operator.allCases where op != .equal && parameter.name.hasSuffix(op.rawValue) {
                let path = String(parameter.name.dropLast(op.rawValue.count))
                return Filter(parameter: parameter.name, path: path, op: op, value: parameter.value)
            }
            return Filter(parameter: parameter.name, path: parameter.name, op: .equal, value: parameter.value)
        }
        // A top-level name that is a field is a field, even if it ends like an operator.
        if isKnownField(parameter.name) {
            return Filter(parameter: parameter.name, path: parameter.name, op: .equal, value: parameter.value)
        }
        for op in Operator.allCases where op != .equal && parameter.name.hasSuffix(op.rawValue) {
            let field = String(parameter.name.dropLast(op.rawValue.count))
            guard isKnownField(field) else { break }
            return Filter(parameter: parameter.name, path: field, op: op, value: parameter.value)
        }
        // An unknown field, or a known field with an unknown operator.
        throw InvalidParameter(name: parameter.name)
    }

    /// The sort keys: `sort` (or the declared sort), with `order`'s directions.
    func sortKeys(sort: String?, order: String?) throws(InvalidParameter) -> [SortKey] {
        let names = sort.map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
        var keys: [SortKey] = []
        for name in names ?? collection.sort {
            let descending = name.hasPrefix("-")
            let path = descending ? String(name.dropFirst()) : name
            guard isKnownField(path) else { throw InvalidParameter(name: "sort") }
            keys.append(SortKey(path: path, descending: descending))
        }
        guard let order else { return keys }
        let directions = order.split(separator: ",", omittingEmptySubsequences: false)
        guard directions.allSatisfy({ $0 == "asc" || $0 == "desc" }) else { throw InvalidParameter(name: "order") }
        // `order` is not used together with `-`.
        guard !keys.contains(where: \.descending) else { throw InvalidParameter(name: "order") }
        // Reading: without `sort`, `order` applies to the declared keys; extra directions are ignored.
        for (index, direction) in directions.enumerated() where index < keys.count {
            keys[index].descending = direction == "desc"
        }
        return keys
    }

    /// The path and the parameters of a target, decoded (`+` is a space, `%XX` a byte).
    static func split(_ target: String) -> (path: String, parameters: [Parameter]) {
        guard let mark = target.firstIndex(of: "?") else { return (target, []) }
        let query = target[target.index(after: mark)...]
        let parameters = query.split(separator: "&").map { raw in
            let name = raw.prefix { $0 != "=" }
            let value = raw.dropFirst(name.count + 1)
            return Parameter(name: decode(name), value: decode(value), raw: String(raw))
        }
        return (String(target[..<mark]), parameters)
    }

    static func decode(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        var input = Array(text.utf8)[...]
        while let byte = input.popFirst() {
            if byte == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else if byte == UInt8(ascii: "%"), input.count >= 2,
                let high = hexValue(input[input.startIndex]), let low = hexValue(input[input.startIndex + 1])
            {
                bytes.append(high << 4 | low)
                input = input.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
