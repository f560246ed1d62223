import { Schema } from "effect"

// A lease's key and holder, apart from the LeaseKeeper entity (which brings the cluster): `ctl lease` checks its
// arguments with these at start-up.
export const LeaseKey = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$/),
  Schema.annotations({ description: "letters, digits and . _ : / -, at most 200 characters" })
)
export const LeaseHolder = Schema.String.pipe(
  Schema.minLength(1),
  Schema.maxLength(200),
  Schema.annotations({ description: "1 to 200 characters" })
)
