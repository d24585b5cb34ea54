import LookoutJSON
import LookoutTestSupport

/// Makes random reads of an ``AccessWorld``: documents and lists with random `fields`,
/// `expand`, filters, `sort`, `q` and paging, and multi-read watches, naming public and
/// private fields alike.
///
/// A query holds at most one parameter that is wrong whoever sends it (a field no
/// document has, a non-reference in `expand`, a page out of range), so the reference need
/// not order two 400s; a 401 and a 400 together are left open (``ReferenceAccess``).
struct RandomAccessRequest {
    let world: AccessWorld

    /// A random target, such as `/v1/alpha?score_gte=3&expand=beta_id&sort=-name`.
    func make(_ random: inout SplitMix64) -> String {
        let collection = world.collections.randomElement(using: &random)!
        switch Int.random(in: 0..<100, using: &random) {
        case 0..<50: return list(collection, &random)
        case 50..<85: return document(collection, &random)
        default: return watch(&random)
        }
    }

    private func list(_ collection: AccessWorld.Collection, _ random: inout SplitMix64) -> String {
        // The one wrong parameter, if any, and where it goes.
        let wrong = chance(15, &random) ? ["filter", "sort", "expand", "page"].randomElement(using: &random)! : nil
        var pieces: [String] = []
        for index in 0..<Int.random(in: 0...2, using: &random) {
            pieces.append(filter(collection, unknown: wrong == "filter" && index == 0, &random))
        }
        if wrong == "filter", !pieces.contains(where: { $0.hasPrefix("nope") || $0.hasPrefix("ghost") }) {
            pieces.append(filter(collection, unknown: true, &random))
        }
        if chance(15, &random) { pieces.append("q=" + RandomQuery.encode(searchText(collection, &random))) }
        if wrong == "sort" || chance(35, &random) {
            var keys = Array(names(collection).shuffled(using: &random).prefix(Int.random(in: 1...2, using: &random)))
            if wrong == "sort" { keys.insert(["nope", "ghost"].randomElement(using: &random)!, at: 0) }
            pieces.append("sort=" + keys.map { chance(40, &random) ? "-" + $0 : $0 }.joined(separator: ","))
        }
        if wrong == "page" {
            pieces.append(["page=0", "limit=abc", "page=1&per_page=0", "limit=1001"].randomElement(using: &random)!)
        } else {
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<25:
                pieces.append("page=\(Int.random(in: 1...4, using: &random))")
                if chance(50, &random) { pieces.append("per_page=\(Int.random(in: 1...5, using: &random))") }
            case 25..<45:
                pieces.append("limit=\(Int.random(in: 1...6, using: &random))")
            default:
                break
            }
        }
        pieces += projection(collection, wrongExpand: wrong == "expand", &random)
        pieces.shuffle(using: &random)
        return "/v1/\(collection.name)" + (pieces.isEmpty ? "" : "?" + pieces.joined(separator: "&"))
    }

    private func document(_ collection: AccessWorld.Collection, _ random: inout SplitMix64) -> String {
        let ids = collection.documents.compactMap { $0["id"]?.intValue }
        let id = chance(10, &random) ? 999 : ids.randomElement(using: &random)!
        let pieces = projection(collection, wrongExpand: chance(8, &random), &random).shuffled(using: &random)
        return "/v1/\(collection.name)/\(id)" + (pieces.isEmpty ? "" : "?" + pieces.joined(separator: "&"))
    }

    private func watch(_ random: inout SplitMix64) -> String {
        let reads = (0..<Int.random(in: 1...3, using: &random)).map { _ in
            let collection = world.collections.randomElement(using: &random)!
            let ids = collection.documents.compactMap { $0["id"]?.intValue }
            let id = chance(10, &random) ? 999 : ids.randomElement(using: &random)!
            guard chance(50, &random) else { return "\(collection.name)/\(id)" }
            return "\(collection.name)/\(id).\(names(collection).randomElement(using: &random)!)"
        }
        return "/v1/watch?read=" + reads.joined(separator: ",")
    }

    // MARK: - Parts

    /// `fields` and `expand`, each maybe.
    private func projection(_ collection: AccessWorld.Collection, wrongExpand: Bool, _ random: inout SplitMix64)
        -> [String]
    {
        var pieces: [String] = []
        if chance(35, &random) {
            var fields = Array(names(collection).shuffled(using: &random).prefix(Int.random(in: 1...3, using: &random)))
            if chance(15, &random) { fields.append(["ghost", "nope"].randomElement(using: &random)!) }
            pieces.append("fields=" + fields.joined(separator: ","))
        }
        let references = collection.references.map(\.field)
        if wrongExpand || (!references.isEmpty && chance(55, &random)) {
            var expand = Array(references.shuffled(using: &random).prefix(Int.random(in: 1...2, using: &random)))
            if wrongExpand {
                let plain = collection.fields.filter { collection.target(of: $0) == nil }
                expand.append(plain.randomElement(using: &random)!)
                expand.shuffle(using: &random)
            }
            pieces.append("expand=" + expand.joined(separator: ","))
        }
        return pieces
    }

    /// A filter on a field of the collection (public or not), or, when `unknown`, on one
    /// no document has.
    private func filter(_ collection: AccessWorld.Collection, unknown: Bool, _ random: inout SplitMix64) -> String {
        let field =
            unknown
            ? ["nope", "ghost"].randomElement(using: &random)! : names(collection).randomElement(using: &random)!
        let op = ["", "", "_ne", "_gte", "_lt", "_like"].randomElement(using: &random)!
        let sample = collection.documents.randomElement(using: &random)![field]
        let value: String
        switch sample {
        case .string(let text)?:
            value = op == "_like" ? String(text.lowercased().prefix(Int.random(in: 1...3, using: &random))) : text
        case .int(let number)?: value = String(number)
        case .bool(let flag)?: value = String(flag)
        default: value = op == "" || op == "_ne" ? "null" : "m"
        }
        return field + op + "=" + RandomQuery.encode(value)
    }

    /// A piece of some string of some document, private fields included.
    private func searchText(_ collection: AccessWorld.Collection, _ random: inout SplitMix64) -> String {
        let strings = collection.documents.flatMap { $0.members.compactMap(\.value.stringValue) }
        guard let text = strings.randomElement(using: &random) else { return "a" }
        let start = Int.random(in: 0..<text.count, using: &random)
        return String(text.dropFirst(start).prefix(Int.random(in: 1...3, using: &random)))
    }

    /// The fields of a collection to name: every declared one and `id`.
    private func names(_ collection: AccessWorld.Collection) -> [String] {
        collection.fields + ["id"]
    }

    private func chance(_ percent: Int, _ random: inout SplitMix64) -> Bool {
        Int.random(in: 0..<100, using: &random) < percent
    }
}
