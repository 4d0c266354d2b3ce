// The image names, apart from the image code: \`plb image build\` shows the default in its help
// without loading dockerode.

/** Name of the image `plb image build` makes. */
export const OFFLINE_IMAGE = 'plb-postgres:15-bookworm';
/** Official image tried when no image is given. */
export const OFFICIAL_IMAGE = 'postgres:15';
