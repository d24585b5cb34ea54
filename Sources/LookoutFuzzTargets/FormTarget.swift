import LookoutHTTP

/// OAuth form bodies (`application/x-www-form-urlencoded`).
///
/// A body is accepted exactly when no decoded name repeats, with each name's decoded
/// value; a refused one names the first name given a second time. The accepted values,
/// encoded again, parse to the same values.
enum FormTarget {
    static func check(_ input: [UInt8]) throws(PropertyViolation) {
        let pairs = QueryParameters(String(decoding: input, as: UTF8.self)[...]).pairs
        // Names compare as Swift strings do, canonically equivalent text alike, as the
        // dictionary of values keys them.
        var seen: Set<String> = []
        let repeated = pairs.first { !seen.insert($0.name).inserted }?.name
        let form: FormBody
        do {
            form = try FormBody(parsing: input)
        } catch {
            switch error {
            case .repeatedName(let name):
                try PropertyViolation.require(
                    repeated == name,
                    "refused for repeating \(excerpt(name)), but the first repeat is \(repeated.map { excerpt($0) } ?? "none")"
                )
            }
            return
        }
        try PropertyViolation.require(repeated == nil, "accepted, though \(excerpt(repeated ?? "")) repeats")
        try PropertyViolation.require(
            form.values.count == pairs.count, "\(pairs.count) pairs give \(form.values.count) values")
        for (name, value) in pairs {
            try PropertyViolation.require(
                form.values[name] == value, "the value of \(excerpt(name)) is not the one sent")
        }
        let body = form.values.sorted { $0.key < $1.key }.map {
            QueryTarget.percentEncoded($0.key) + "=" + QueryTarget.percentEncoded($0.value)
        }.joined(separator: "&")
        let again: FormBody
        do {
            again = try FormBody(parsing: Array(body.utf8))
        } catch {
            throw PropertyViolation("the values, encoded again, are refused: \(error)")
        }
        try PropertyViolation.require(again.values == form.values, "the values, encoded again, parse to others")
    }
}
