import LookoutHTTP
import Synchronization

/// What a shared rendering (``RenderedView/sharedAs``) depends on in its request: the view
/// key, and the `Authorization` header its grant is decided from at every render. Held
/// polls with equal identities see the same bytes at a revision.
struct RenderIdentity: Equatable, Sendable {
    let viewKey: String
    let authorization: String?
}

/// The last shared rendering made in one batch of wakes (one loop's pass over the polls a
/// write woke, or the write's own), and the key of its shared answer, kept for the rest of
/// that batch only: the polls of a fan-out that see one view with one header render it
/// once per pass, not once each (the render cache's lookup, the collection's options, the
/// grant and the target), and name its answer with one key, which the batch then finds
/// without comparing its parts (Benchmarks/README.md, stop 53).
///
/// Not beyond the batch: its grant was decided from the header when it was rendered, and a
/// token may expire or be revoked after. A poll answered from it within the pass (a few
/// ms) sees what it would have seen had it been the poll rendered first.
final class WakeRenders: Sendable {
    private struct Last: Sendable {
        let identity: RenderIdentity
        let view: RenderedView
    }

    /// A shared answer's key, and what it was made from.
    private struct AnswerKey: Sendable {
        let view: ViewCacheKey
        let revision: UInt64
        let epoch: String
        let changed: [String]
        let key: [String]
    }

    private let last = Mutex<Last?>(nil)
    private let answerKey = Mutex<AnswerKey?>(nil)

    /// The view kept for `identity` at `revision`, else `render`'s, kept when it is shared.
    func view(
        for identity: RenderIdentity, at revision: UInt64, render: () throws -> RenderedView
    ) rethrows -> RenderedView {
        let kept = last.withLock { last -> RenderedView? in
            guard let last, last.view.revision == revision, last.identity == identity else { return nil }
            return last.view
        }
        if let kept { return kept }
        let view = try render()
        if view.sharedAs != nil { last.withLock { $0 = Last(identity: identity, view: view) } }
        return view
    }

    /// The key of the answer made from `view` (rendered under `name`), `epoch` and
    /// `changed`: the last one's when made from the same, else `make`'s.
    func answerKey(
        _ name: ViewCacheKey, _ view: RenderedView, epoch: String, changed: [String], make: () -> [String]
    ) -> [String] {
        let kept = answerKey.withLock { kept -> [String]? in
            guard let kept, kept.revision == view.revision, kept.view == name, kept.epoch == epoch,
                kept.changed == changed
            else { return nil }
            return kept.key
        }
        if let kept { return kept }
        let key = make()
        answerKey.withLock {
            $0 = AnswerKey(view: name, revision: view.revision, epoch: epoch, changed: changed, key: key)
        }
        return key
    }
}
