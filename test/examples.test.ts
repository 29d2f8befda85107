import { describe, expect, it } from 'vitest'
import { handleSignup } from '../examples/signup.js'

describe('examples/signup.ts (the README example)', () => {
  it('branches on recommendation.action', async () => {
    expect(await handleSignup({ email: 'deliverable@example.com' }, '192.0.2.1')).toMatchObject({ status: 201 })
    expect(await handleSignup({ email: 'typo@example.com' }, '192.0.2.1')).toMatchObject({ status: 202, body: expect.stringMatching(/^Check your inbox/) })
    expect(await handleSignup({ email: 'disposable@example.com' }, '192.0.2.2')).toMatchObject({ status: 422 })
  })
})
