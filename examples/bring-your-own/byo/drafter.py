"""A drafter under the runner's protocol: propose(rows) -> one list of draft ids per row. A small
prompt-lookup drafter: the 3 tokens that followed the last earlier occurrence of the last token."""

from collections.abc import Sequence

from arctic_ref.spec.drafts import DraftRow


class LookupDrafter:
    def __init__(self, max_model_len: int, k: int = 3) -> None:
        self.max_model_len = max_model_len
        self.k = k

    def propose(self, rows: Sequence[DraftRow]) -> list[list[int]]:
        out = []
        for row in rows:
            tokens = list(row.token_ids)
            room = min(self.k, self.max_model_len - len(tokens) - 1)
            if not row.sampled or room <= 0:
                out.append([])
                continue
            last = tokens[-1]
            earlier = [i for i in range(len(tokens) - 1) if tokens[i] == last]
            out.append(tokens[earlier[-1] + 1 : earlier[-1] + 1 + room] if earlier else [])
        return out


def make_drafter(max_model_len: int) -> LookupDrafter:
    return LookupDrafter(max_model_len)
