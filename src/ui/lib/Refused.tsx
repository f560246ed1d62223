import type { Refusal } from "./api.js"

/** A refusal as the API gave it: status, code, detail (a 401 reads "this token cannot read this"). */
export const Refused = ({ refusal }: { refusal: Refusal }) => (
  <div class="refused" role="alert">
    <strong>
      {refusal.status ?? "no answer"} {refusal.code}
    </strong>{" "}
    {refusal.detail}
  </div>
)
