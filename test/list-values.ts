/** Random list values for the property tests of lists (the library's and the service's): text, Unicode, and values of every item type, valid or nearly so. */
import fc from 'fast-check'

/** Strings up to `maxLength` (Unicode ones half as long) and values shaped like each item type, with edge cases. */
export function listValueText(maxLength: number): fc.Arbitrary<string> {
  return fc.oneof(
    fc.string({ maxLength }),
    fc.string({ unit: 'grapheme', maxLength: maxLength / 2 }),
    fc.string({ unit: 'binary', maxLength: maxLength / 2 }),
    fc.emailAddress(),
    fc.domain(),
    fc.ipV4(),
    fc.ipV6(),
    fc.tuple(fc.ipV4(), fc.integer({ min: -1, max: 40 })).map(([ip, p]) => `${ip}/${p}`),
    fc.stringMatching(/^\+[0-9 ()-]{0,20}$/),
    fc.constantFrom('AS64500', 'as0', 'GB', 'gb', 'XX', '+44 20 7946 0958', '２０１.example', 'bücher.de', 'jörg@bücher.de', '\u0000', 'a\u0000b@x.io', '\ud800', ' ', 'x'.repeat(500)),
  )
}
