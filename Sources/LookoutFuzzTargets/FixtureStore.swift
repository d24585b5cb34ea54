import LookoutJSON
import LookoutStore

/// The small in-memory store that the query, cursor and merge-patch targets read and
/// write: one collection for each kind of declared options.
///
/// - `shops`: sorted by `-rating`, pages of 3, `views` ignored, `owner_id` referring to
///   `owners`, some fields public; values of every JSON type, nested objects and arrays,
///   a dangling and a non-integer reference.
/// - `owners`: only `name` public. `feed`: a page envelope, all public. `vault`:
///   nothing public.
///
/// No field is named like another field plus an operator suffix (`rating_gt`), so a
/// filter means the same whether a token is sent or not.
enum FixtureStore {
    /// The collections, in the order the targets try them.
    static let collections = ["shops", "owners", "feed", "vault"]

    /// One store for reading; ``make()`` gives a fresh one to write to.
    static let snapshot: StoreSnapshot = make().snapshot()

    static func make() -> Store {
        // The declarations are constants that are known to be valid.
        try! Store(
            [
                try! DocumentCollection(
                    name: "shops",
                    options: .init(
                        sort: ["-rating"], pageSize: 3, ignored: ["views"], references: ["owner_id": "owners"],
                        publicFields: .fields(["name", "rating", "city", "owner_id", "tags"])),
                    documents: shops),
                try! DocumentCollection(
                    name: "owners", options: .init(publicFields: .fields(["name"])), documents: owners),
                try! DocumentCollection(
                    name: "feed",
                    options: .init(sort: ["title"], pageSize: 2, pageEnvelope: "items", publicFields: .all),
                    documents: feed),
                try! DocumentCollection(name: "vault", documents: [["id": 1, "code": "x"], ["id": 2, "code": "y"]]),
            ], epoch: "f0")
    }

    private static let shops: [JSONValue] = [
        [
            "id": 1, "name": "Alpha", "rating": 1, "city": "Tokyo", "open": true,
            "address": ["city": "Tokyo", "zip": "100-0001"], "tags": ["new", "café"], "owner_id": 1,
            "secret": "s1", "views": 10,
        ],
        ["id": 2, "name": "beta", "rating": 2, "city": "Osaka", "open": false, "owner_id": 2, "note": nil],
        ["id": 3, "name": "Gamma Café", "rating": 3, "open": true, "owner_id": 9, "tags": []],
        ["id": 4, "name": "delta", "rating": 4.5, "note": "ALPHA fans", "secret": ["pin": 1234]],
        ["id": 5, "name": "Epsilon", "rating": 5, "city": "Tokyo", "owner_id": "x"],
        ["id": 6, "name": "喫茶 zeta", "rating": 6.0, "open": false, "city": nil, "address": ["city": "Kyoto"]],
    ]

    private static let owners: [JSONValue] = [
        ["id": 1, "name": "Ann", "email": "ann@example.com"],
        ["id": 2, "name": "Bo", "email": "bo@example.com", "shops": [1, 2]],
    ]

    private static let feed: [JSONValue] = [
        ["id": 1, "title": "a", "body": "first"], ["id": 2, "title": "c", "body": "second"],
        ["id": 3, "title": "b", "body": "third"], ["id": 4, "title": "d"],
    ]
}
