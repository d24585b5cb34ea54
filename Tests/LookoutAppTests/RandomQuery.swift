import LookoutJSON
import LookoutTestSupport

/// Makes random list queries over one collection, percent-encoded as a client sends them.
///
/// Only cases the README settles are generated: filter values are read back as the field's
/// type from canonical text (`4`, `4.0`, `-1.5`), `q` never matches a field name, `order`
/// always comes with `sort`, `fields` names top-level fields, and an invalid query has
/// exactly one wrong parameter.
struct RandomQuery {
    /// Which fields of a collection hold which kinds of values.
    struct Catalog {
        var strings: [String]
        var numbers: [String]
        var booleans: [String]
        /// Arrays and objects: only `=` and `_ne` with some text, which never matches.
        var containers: [String]
        var sortable: [String]
        var projectable: [String]
    }

    static let places = Catalog(
        strings: ["name", "category", "min_budget", "code", "address.city", "address.zip", "note", "tags.0", "tags.1"],
        numbers: ["id", "score", "rating", "distance", "total", "total_like"],
        booleans: ["open"],
        containers: ["tags", "address"],
        sortable: [
            "id", "name", "category", "score", "rating", "distance", "open", "min_budget", "code", "total",
            "total_like", "address.city", "tags.0", "note", "mixed",
        ],
        projectable: [
            "id", "name", "category", "score", "rating", "distance", "open", "min_budget", "code", "total",
            "total_like", "address", "tags", "note", "mixed",
        ])

    static let reviews = Catalog(
        strings: ["title", "author"], numbers: ["id", "stars", "helpful"], booleans: [], containers: [],
        sortable: ["id", "title", "stars", "helpful", "author"], projectable: ["id", "title", "stars", "author"])

    let reference: ReferenceQuery
    let catalog: Catalog
    /// Every object key of the collection, folded: `q` stays away from them.
    let keys: [String]

    init(reference: ReferenceQuery, catalog: Catalog) {
        self.reference = reference
        self.catalog = catalog
        func keys(in value: JSONValue) -> [String] {
            switch value {
            case .object(let object): object.members.flatMap { [$0.key] + keys(in: $0.value) }
            case .array(let elements): elements.flatMap(keys)
            default: []
            }
        }
        self.keys = Array(Set(reference.collection.documents.flatMap { keys(in: .object($0)) }.map { $0.lowercased() }))
    }

    var path: String { "/v1/\(reference.collection.name)" }

    /// One random target, such as `/v1/places?score_gte=3&sort=-name&page=2`.
    func make(_ random: inout SplitMix64) -> String {
        // At most one wrong parameter, and nothing else of its kind that could take its place.
        let wrong = chance(8, &random) ? Self.invalid.randomElement(using: &random)! : nil
        let wrongKind = wrong.map { $0.prefix { $0 != "=" } } ?? ""
        var pieces: [String] = wrong.map { [$0] } ?? []
        for _ in 0..<Int.random(in: 0...3, using: &random) { pieces += filter(&random) }
        if chance(20, &random) { pieces.append("q=" + encode(searchText(&random), &random)) }
        if wrongKind != "sort", chance(50, &random) { pieces += sort(&random) }
        switch Int.random(in: 0..<100, using: &random) {
        case _ where ["page", "per_page", "limit"].contains(wrongKind):
            break
        case 0..<30:
            pieces.append("page=\(pageNumber(&random))")
            if chance(60, &random) {
                pieces.append("per_page=\([1, 2, 3, 5, 7, 10, 20, 50, 1000].randomElement(using: &random)!)")
            }
        case 30..<55:
            pieces.append("limit=\([1, 2, 5, 10, 20, 1000].randomElement(using: &random)!)")
        default:
            break
        }
        if chance(25, &random) {
            let count = Int.random(in: 1...3, using: &random)
            pieces.append("fields=" + catalog.projectable.shuffled(using: &random).prefix(count).joined(separator: ","))
        }
        pieces.shuffle(using: &random)
        return pieces.isEmpty ? path : path + "?" + pieces.joined(separator: "&")
    }

    /// Wrong parameters, each alone of its kind in a query (`per_page` and `order` come with
    /// the parameter they modify).
    static let invalid = [
        "nope=1", "colour_ne=red", "score_between=3", "name_contains=a", "sort=nope", "sort=name,-nope",
        "sort=id&order=up", "sort=id&order=descending", "page=abc", "page=0", "page=-1", "page=1.5",
        "page=1&per_page=0", "page=2&per_page=1001", "page=1&per_page=x", "limit=0", "limit=-5", "limit=1001",
        "limit=ten",
    ]

    // MARK: - Parts of a query

    private func filter(_ random: inout SplitMix64) -> [String] {
        let kinds: [(paths: [String], weight: Int)] = [
            (catalog.strings, 5), (catalog.numbers, 5), (catalog.booleans, 1), (catalog.containers, 1),
        ]
        let weighted = kinds.filter { !$0.paths.isEmpty }.flatMap { Array(repeating: $0.paths, count: $0.weight) }
        let paths = weighted.randomElement(using: &random)!
        let path = paths.randomElement(using: &random)!
        guard reference.isKnownField(path) else { return [] }
        let kind: Kind =
            catalog.strings.contains(path)
            ? .string
            : catalog.numbers.contains(path) ? .number : catalog.booleans.contains(path) ? .boolean : .container
        let operators: [ReferenceQuery.Operator] =
            switch kind {
            case .string, .number: [.equal, .equal, .notEqual, .greater, .greaterOrEqual, .less, .lessOrEqual, .like]
            case .boolean, .container: [.equal, .equal, .notEqual]
            }
        let op = operators.randomElement(using: &random)!
        let repeats = chance(20, &random) ? 2 : 1
        return (0..<repeats).map { _ in
            "\(path)\(op.rawValue)=" + encode(value(for: path, kind: kind, op: op, &random), &random)
        }
    }

    private enum Kind { case string, number, boolean, container }

    private func value(for path: String, kind: Kind, op: ReferenceQuery.Operator, _ random: inout SplitMix64)
        -> String
    {
        let sample = ReferenceQuery.value(at: path, in: reference.collection.documents.randomElement(using: &random)!)
        switch kind {
        case .string:
            guard case .string(let text)? = sample else {
                return op == .equal || op == .notEqual ? "null" : "m"
            }
            if op == .like { return likePattern(text, &random) }
            return chance(20, &random) ? flipCase(text, &random) : text
        case .number:
            if op == .like { return "4" }
            if chance(4, &random) { return "abc" }
            switch sample {
            case .int(let number)?:
                return [String(number), "\(number).0", "\(number).5", String(number)].randomElement(using: &random)!
            case .double(let number)?: return number.description
            default: return op == .equal || op == .notEqual ? "null" : "3"
            }
        case .boolean: return ["true", "false", "null", "yes"].randomElement(using: &random)!
        case .container: return ["new", "Tokyo", "null"].randomElement(using: &random)!
        }
    }

    /// A piece of `text`, maybe anchored, with case changed or a `*` in the middle.
    private func likePattern(_ text: String, _ random: inout SplitMix64) -> String {
        let scalars = Array(text.unicodeScalars)
        if scalars.isEmpty || chance(8, &random) { return "zq" }
        let length = Int.random(in: 1...min(5, scalars.count), using: &random)
        let start = Int.random(in: 0...(scalars.count - length), using: &random)
        var piece = scalars[start..<start + length].map(String.init)
        if piece.count >= 3, chance(25, &random) { piece[Int.random(in: 1..<piece.count - 1, using: &random)] = "*" }
        var pattern = piece.joined()
        if chance(25, &random) { pattern = flipCase(pattern, &random) }
        if start == 0, chance(50, &random) { pattern = "^" + pattern }
        if start + length == scalars.count, chance(50, &random) { pattern += "$" }
        return pattern
    }

    /// A piece of some string of some document that is in no field name.
    private func searchText(_ random: inout SplitMix64) -> String {
        for _ in 0..<50 {
            let document = reference.collection.documents.randomElement(using: &random)!
            guard let text = ReferenceQuery.strings(in: .object(document)).randomElement(using: &random) else {
                continue
            }
            let scalars = Array(text.unicodeScalars)
            guard !scalars.isEmpty else { continue }
            let length = Int.random(in: 1...min(4, scalars.count), using: &random)
            let start = Int.random(in: 0...(scalars.count - length), using: &random)
            var piece = String(String.UnicodeScalarView(scalars[start..<start + length]))
            if chance(30, &random) { piece = flipCase(piece, &random) }
            let folded = piece.lowercased()
            if !keys.contains(where: { $0.contains(folded) }) { return piece }
        }
        return "東京"
    }

    private func sort(_ random: inout SplitMix64) -> [String] {
        let keys = Array(catalog.sortable.shuffled(using: &random).prefix(Int.random(in: 1...3, using: &random)))
        if chance(50, &random) {
            return ["sort=" + keys.map { chance(50, &random) ? "-" + $0 : $0 }.joined(separator: ",")]
        }
        var pieces = ["sort=" + keys.joined(separator: ",")]
        if chance(70, &random) {
            let count = Int.random(in: 1...keys.count, using: &random)
            pieces.append(
                "order=" + (0..<count).map { _ in chance(50, &random) ? "asc" : "desc" }.joined(separator: ","))
        }
        return pieces
    }

    private func pageNumber(_ random: inout SplitMix64) -> Int {
        switch Int.random(in: 0..<10, using: &random) {
        case 0..<4: 1
        case 4..<9: Int.random(in: 2...8, using: &random)
        default: Int.random(in: 9...200, using: &random)
        }
    }

    // MARK: - Text

    private func chance(_ percent: Int, _ random: inout SplitMix64) -> Bool {
        Int.random(in: 0..<100, using: &random) < percent
    }

    private func flipCase(_ text: String, _ random: inout SplitMix64) -> String {
        chance(50, &random) ? text.uppercased() : text.lowercased()
    }

    /// Percent-encodes a value: unreserved characters, `,`, `*` and `$` as they are, a
    /// space as `+` or `%20`, every other byte as `%XX`.
    func encode(_ text: String, _ random: inout SplitMix64) -> String {
        let plus = chance(50, &random)
        let commas = chance(70, &random)
        return Self.encode(text, spaceAsPlus: plus, rawCommas: commas)
    }

    static func encode(_ text: String, spaceAsPlus: Bool = true, rawCommas: Bool = true) -> String {
        let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~*$".utf8)
        var encoded = ""
        for byte in text.utf8 {
            if unreserved.contains(byte) || (rawCommas && byte == UInt8(ascii: ",")) {
                encoded.append(Character(Unicode.Scalar(byte)))
            } else if byte == UInt8(ascii: " ") && spaceAsPlus {
                encoded.append("+")
            } else {
                let hex = String(byte, radix: 16, uppercase: true)
                encoded += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return encoded
    }
}
