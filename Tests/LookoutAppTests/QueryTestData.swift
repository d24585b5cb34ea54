import Foundation
import LookoutJSON
import LookoutTestSupport

/// Seeded random collections for the query comparison, and the data file that serves them.
///
/// - `places` (~150 documents, no declared sort, `page_size` 20): ints, doubles with ints
///   mixed in (`4` and `4.0`), strings in mixed case, Japanese and precomposed accents,
///   booleans, nulls, missing fields, `address.city`, `tags`, and many ties. Each field
///   has either nulls or missing values, never both (whether they tie is not written
///   down), and `mixed` holds one value of every kind for the sort order across types.
/// - `reviews` (40 documents, declared `"sort": ["-stars", "title"]`, `page_size` 7).
/// - `edges`: a few hand-written documents for fixed tests (Unicode scalars, null vs missing).
///
/// All three are `"public": true`: the comparison reads anonymously.
struct QueryTestData {
    static let defaultSeed: UInt64 = 0x4C4F_4F4B_4F55_5431

    /// `LOOKOUT_QUERY_SEED` (decimal or 0x-hex) if set, else the default.
    static var seed: UInt64 {
        guard let text = ProcessInfo.processInfo.environment["LOOKOUT_QUERY_SEED"] else { return defaultSeed }
        let parsed = text.hasPrefix("0x") ? UInt64(text.dropFirst(2), radix: 16) : UInt64(text)
        return parsed ?? defaultSeed
    }

    var places: ReferenceQuery.Collection
    var reviews: ReferenceQuery.Collection
    var edges: ReferenceQuery.Collection

    static let names = [
        "Café Blue", "café blue", "CAFÉ BLUE", "Blue Bottle", "東京カフェ", "カフェ東京", "とうきょう茶房", "Über Bar",
        "über bar", "Zeta Lounge", "alpha", "Alpha", "ALPHA beta", "Bistro (本店)", "St. Marc", "C++ Café", "5* Hotel",
        "寿司 さくら", "Naïve Noodle", "naïve noodle", "Ramen 一蘭", "Öl & Brot", "100% Juice", "a.b?c", "ZZ top",
        "Çà et là", "Tokyo Tower 東京",
    ]
    static let categories = ["cafe", "Cafe", "bar", "sushi", "ラーメン", "bakery", "Bakery"]
    static let budgets = ["1,000", "16,000", "2,500", "800", "12,000", "¥3,000"]
    static let codes = ["007", "42", "042", "7", "100", "abc", "A-1"]
    static let cities = ["Tokyo", "tokyo", "Kyoto", "Ōsaka", "São Paulo", "Paris", "東京", "京都", "ÉVREUX"]
    static let tags = ["new", "New", "popular", "限定", "sale", "café", "Sale!", "ÉTÉ"]
    static let notes = ["駅から徒歩5分", "Open late", "Closed on Mondays", "テラス席あり", "Wi-Fi free", "Cash only (現金のみ)"]
    static let ratings: [JSONValue] = [3, 3.5, 4, 4.0, 4.5, 5, 2.25, -1.5, 0, 0.1, 5.0]
    static let mixed: [JSONValue] = [
        nil, false, true, 0, 1, 2.5, -3, 1.0, "a", "B", "ä", "数", "10", ["x", 1], ["k": 1],
    ]
    static let titles = ["Great", "great", "Okay", "最高", "まあまあ", "Très bien", "Bad", "zzz", "Great!"]
    static let authors = ["Yuki", "yuki", "Émile", "Ana", "佐藤", "ana"]

    /// The collections a seed makes, read back through the JSON parser exactly as the
    /// server reads the data file.
    init(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let file = try JSONParser.parse(JSONWriter.encode(Self.collections(&random)))
        func collection(_ value: JSONValue) -> ReferenceQuery.Collection {
            ReferenceQuery.Collection(
                name: value["name"]!.stringValue!,
                sort: value["sort"]?.arrayValue?.compactMap(\.stringValue) ?? [],
                pageSize: value["page_size"]!.intValue!,
                documents: value["documents"]!.arrayValue!.map { $0.objectValue! })
        }
        let collections = file.arrayValue!.map(collection)
        places = collections[0]
        reviews = collections[1]
        edges = collections[2]
    }

    private static func collections(_ random: inout SplitMix64) -> JSONValue {
        let placeIDs = Array((1...400).shuffled(using: &random).prefix(150))
        let reviewIDs = Array(1...40).shuffled(using: &random)
        let places = placeIDs.map { place(id: $0, &random) }
        let reviews = reviewIDs.map { review(id: $0, &random) }
        return [
            ["name": "places", "public": true, "page_size": 20, "documents": .array(places)],
            [
                "name": "reviews", "public": true, "sort": ["-stars", "title"], "page_size": 7,
                "documents": .array(reviews),
            ],
            ["name": "edges", "public": true, "page_size": 5, "documents": .array(edgeDocuments)],
        ]
    }

    private static func place(id: Int, _ random: inout SplitMix64) -> JSONValue {
        func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &random) < percent }
        var document: JSONObject = ["id": .int(id)]
        document["name"] = .string(names.randomElement(using: &random)!)
        document["category"] = .string(categories.randomElement(using: &random)!)
        if !chance(12) { document["score"] = .int(Int.random(in: 0...10, using: &random)) }
        document["rating"] = chance(10) ? .null : ratings.randomElement(using: &random)!
        if !chance(20) { document["distance"] = .double(Double(Int.random(in: 1...2000, using: &random)) / 100) }
        document["open"] = chance(10) ? .null : .bool(chance(50))
        document["min_budget"] = .string(budgets.randomElement(using: &random)!)
        document["code"] = .string(codes.randomElement(using: &random)!)
        document["total"] = .int(Int.random(in: 0...5, using: &random))
        document["total_like"] = .int(Int.random(in: 0...5, using: &random))
        if !chance(15) {
            var address: JSONObject = [:]
            if !chance(10) { address["city"] = .string(cities.randomElement(using: &random)!) }
            address["zip"] = .string(
                "\(Int.random(in: 100...109, using: &random))-000\(Int.random(in: 1...3, using: &random))")
            document["address"] = .object(address)
        }
        if !chance(15) {
            let count = Int.random(in: 0...3, using: &random)
            document["tags"] = .array((0..<count).map { _ in .string(tags.randomElement(using: &random)!) })
        }
        if chance(50) { document["note"] = .string(notes.randomElement(using: &random)!) }
        document["mixed"] = mixed.randomElement(using: &random)!
        return .object(document)
    }

    private static func review(id: Int, _ random: inout SplitMix64) -> JSONValue {
        var document: JSONObject = ["id": .int(id)]
        document["title"] = .string(titles.randomElement(using: &random)!)
        if Int.random(in: 0..<10, using: &random) > 0 {
            document["stars"] = .int(Int.random(in: 1...5, using: &random))
        }
        document["author"] = .string(authors.randomElement(using: &random)!)
        document["helpful"] = .int(Int.random(in: 0...20, using: &random))
        return .object(document)
    }

    /// Spellings that differ only in Unicode scalars, and `v`: null, missing or a number.
    static let edgeDocuments: [JSONValue] = [
        ["id": 1, "word": "caf\u{E9}", "v": nil],
        ["id": 2, "word": "cafe\u{301}"],
        ["id": 3, "word": "cafe", "v": 1],
        ["id": 4, "word": "caf\u{E9}s", "v": nil],
        ["id": 5, "word": "Cafe"],
        ["id": 6, "word": "cafe\u{301}s", "v": 0],
    ]

    /// Writes the data file (the three collections and the demo users, editor included)
    /// into `directory` and returns its path.
    static func writeDataFile(seed: UInt64, into directory: String) throws -> String {
        var random = SplitMix64(seed: seed)
        let demo = try JSONParser.parse(Array(try Data(contentsOf: DemoData.url)))
        let file: JSONValue = ["collections": collections(&random), "users": demo["users"]!]
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/query-data.json"
        try Data(JSONWriter.encode(file)).write(to: URL(fileURLWithPath: path))
        return path
    }
}
