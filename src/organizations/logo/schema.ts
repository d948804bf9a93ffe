import { imageUploadBody, imageUrlQuery, type UploadImageType } from '../../core/image-upload.ts';

export const MAX_LOGO_BYTES = 1024 * 1024;

export type LogoContentType = UploadImageType;

export const putLogoBody = imageUploadBody(MAX_LOGO_BYTES).openapi('PutOrganizationLogo');

export const logoQuery = imageUrlQuery('logo_url');
