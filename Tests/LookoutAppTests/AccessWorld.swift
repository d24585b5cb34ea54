import Foundation
import LookoutJSON
import LookoutTestSupport

/// A seeded random data file for comparing who may read what against
/// ``ReferenceAccess``: three or four collections, each public as a whole, in part or not
/// at all, referring to one another (into partly public and private ones too), with
/// random documents.
///
/// Every declared field is held by some document, so a field that is not in a document
/// is one the query names on purpose (`nope`, or `ghost`: declared public, held by none).
struct AccessWorld {
    /// What a collection lets a reader without a token see.
    enum Visibility: Equatable {
        /// `"public": true`.
        case all
        /// `"public": [names]`: those and `id`.
        case some([String])
        /// No `public`, or `"public": false` when `declared`.
        case none(declared: Bool)
    }

    struct Collection {
        var name: String
        var visibility: Visibility
        /// Reference fields and the collection each points into, as declared.
        var references: [(field: String, target: String)]
        /// The declared sort, `-` marking a descending key.
        var sort: [String]
        var pageSize: Int
        /// Every field name documents may hold besides `id`, references included.
        var fields: [String]
        var documents: [JSONObject]

        var hasPublicFields: Bool {
            if case .none = visibility { false } else { true }
        }

        func target(of field: String) -> String? {
            references.first { $0.field == field }?.target
        }
    }

    static let defaultSeed: UInt64 = 0x4143_4345_5353_3031

    /// `LOOKOUT_ACCESS_SEED` (decimal or 0x-hex) if set, else the default.
    static var seed: UInt64 {
        guard let text = ProcessInfo.processInfo.environment["LOOKOUT_ACCESS_SEED"] else { return defaultSeed }
        let parsed = text.hasPrefix("0x") ? UInt64(text.dropFirst(2), radix: 16) : UInt64(text)
        return parsed ?? defaultSeed
    }

    static let names = ["alpha", "beta", "gamma", "delta"]
    static let stringFields = ["title", "name", "email", "note", "code"]
    static let numberFields = ["score", "rank"]
    static let booleanFields = ["flag"]
    static let words = [
        "Apple", "apple pie", "Banana", "cherry", "Date", "tokyo", "Kyoto", "osaka", "blue", "Blue sky",
        "ann@example.com",
        "zeta", "s3cr3t",
    ]

    var collections: [Collection]

    func collection(_ name: String) -> Collection? {
        collections.first { $0.name == name }
    }

    // MARK: - Making one

    /// The collections `seed` makes, read back through the JSON parser exactly as the
    /// server reads the data file.
    init(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let made = Self.make(&random)
        let file = try JSONParser.parse(JSONWriter.encode(.array(made.map(Self.declaration))))
        collections = zip(made, file.arrayValue ?? []).map { collection, declared in
            var collection = collection
            collection.documents = declared["documents"]?.arrayValue?.compactMap(\.objectValue) ?? []
            return collection
        }
    }

    private static func make(_ random: inout SplitMix64) -> [Collection] {
        let count = Int.random(in: 3...4, using: &random)
        let names = Array(Self.names.prefix(count))
        // 0: public as a whole, 1: in part, 2: nothing public. The first collection is
        // public as a whole and refers to every other one, the second is partly public,
        // and some collection has nothing public; the rest is chance.
        var kinds = [0, 1] + (2..<count).map { _ in Int.random(in: 0...2, using: &random) }
        if !kinds.contains(2) { kinds[count - 1] = 2 }
        let ids = names.map { _ in
            Array(Array(1...30).shuffled(using: &random).prefix(Int.random(in: 6...12, using: &random)))
        }
        var collections: [Collection] = []
        for (index, name) in names.enumerated() {
            var plain = (stringFields + numberFields + booleanFields).shuffled(using: &random)
            plain = Array(plain.prefix(Int.random(in: 3...5, using: &random)))
            // Up to two references elsewhere (every other collection, for the first), and
            // now and then one to the collection itself.
            var targets = names.filter { $0 != name }.shuffled(using: &random)
            targets = index == 0 ? targets : Array(targets.prefix(Int.random(in: 0...2, using: &random)))
            if index != 0, chance(15, &random) { targets.append(name) }
            let references = targets.map { (field: "\($0)_id", target: $0) }
            let fields = plain + references.map(\.field)
            let visibility: Visibility
            switch kinds[index] {
            case 0: visibility = .all
            case 1:
                var listed = Array(
                    fields.shuffled(using: &random).prefix(Int.random(in: 1...max(1, fields.count - 1), using: &random))
                )
                if chance(40, &random) { listed.append("ghost") }
                visibility = .some(listed)
            default: visibility = .none(declared: chance(50, &random))
            }
            var sortable = fields
            if case .some(let listed) = visibility { sortable = listed.filter { $0 != "ghost" } }
            var sort: [String] = []
            if chance(40, &random), let key = sortable.randomElement(using: &random) {
                sort = [chance(50, &random) ? "-" + key : key]
            }
            let documents = ids[index].enumerated().map { position, id in
                document(
                    id: id, fields: plain, references: references, allFields: position == 0,
                    ids: Dictionary(uniqueKeysWithValues: zip(names, ids)), &random)
            }
            collections.append(
                Collection(
                    name: name, visibility: visibility, references: references, sort: sort,
                    pageSize: Int.random(in: 3...8, using: &random), fields: fields, documents: documents))
        }
        return collections
    }

    private static func document(
        id: Int,
        fields: [String],
        references: [(field: String, target: String)],
        allFields: Bool,
        ids: [String: [Int]],
        _ random: inout SplitMix64
    ) -> JSONObject {
        var document: JSONObject = ["id": .int(id)]
        for field in fields where allFields || !chance(15, &random) {
            document[field] = value(for: field, &random)
        }
        for reference in references where allFields || !chance(20, &random) {
            switch Int.random(in: 0..<10, using: &random) {
            case 0: document[reference.field] = .null
            case 1: document[reference.field] = 99
            default: document[reference.field] = .int(ids[reference.target]!.randomElement(using: &random)!)
            }
        }
        return document
    }

    static func value(for field: String, _ random: inout SplitMix64) -> JSONValue {
        if numberFields.contains(field) {
            return chance(10, &random) ? .null : .int(Int.random(in: 0...9, using: &random))
        }
        if booleanFields.contains(field) {
            return chance(10, &random) ? .null : .bool(chance(50, &random))
        }
        return .string(words.randomElement(using: &random)!)
    }

    static func chance(_ percent: Int, _ random: inout SplitMix64) -> Bool {
        Int.random(in: 0..<100, using: &random) < percent
    }

    // MARK: - The data file

    static func declaration(_ collection: Collection) -> JSONValue {
        var object: JSONObject = ["name": .string(collection.name), "page_size": .int(collection.pageSize)]
        switch collection.visibility {
        case .all: object["public"] = true
        case .some(let names): object["public"] = .array(names.map(JSONValue.string))
        case .none(let declared): if declared { object["public"] = false }
        }
        if !collection.references.isEmpty {
            object["references"] = .object(
                JSONObject(collection.references.map { ($0.field, JSONValue.string($0.target)) }))
        }
        if !collection.sort.isEmpty { object["sort"] = .array(collection.sort.map(JSONValue.string)) }
        object["documents"] = .array(collection.documents.map(JSONValue.object))
        return .object(object)
    }

    /// Writes the data file, with the demo users at the cheapest hash cost, and returns its path.
    func writeDataFile() throws -> String {
        let users = try JSONParser.parse(Array(try ReadAccessTests.users().utf8))
        let file: JSONValue = ["collections": .array(collections.map(Self.declaration)), "users": users]
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("lookout-access-\(UUID()).json").path
        try Data(JSONWriter.encode(file)).write(to: URL(fileURLWithPath: path))
        return path
    }

    // MARK: - Writes

    /// The fields of `collection` a reader without a token may read (nil: every one).
    static func publicFields(of collection: Collection) -> [String]? {
        switch collection.visibility {
        case .all: nil
        case .some(let names): names
        case .none: []
        }
    }

    /// Applies `patch` to document `id` of `collection`, as the server's merge patch does
    /// for the flat values written here.
    mutating func apply(_ patch: JSONObject, to id: Int, in collection: String) {
        guard let index = collections.firstIndex(where: { $0.name == collection }),
            let position = collections[index].documents.firstIndex(where: { $0["id"] == .int(id) })
        else { return }
        for member in patch {
            collections[index].documents[position][member.key] = member.value
        }
    }
}
